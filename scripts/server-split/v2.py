exec(open('/tmp/splitwork/v1.py').read())
ORDER=['config','peer','core','repair','cmds','node']
_fd=FILE_DEFAULT
def FILE_DEFAULT(f):
    if f=='config.go': return 'config'
    return _fd(f)
put('config','InMemory','Clock','Config.clock','Config.raftLogOutput','Config.validateInMemory','Config.protectedRefuses','isLoopbackAddr','Version')
put('cmds','counters.commands')  # note: field split handled in FIELD
put('cmds','nodeStats','schemeUsage','schemeUsage.add','Node.localStats','Node.onStats','Node.clusterStats','sumSchemes','errSkipped')
put('cmds','Node.selfState')
put('core','Node.flushStores')
put('repair','forEach')
put('core','Node.rehomePacked')
put('core','pieceKindReplica','pieceKindShard','pieceKindDirectory','parsePieceKey')
FIELD['Node.stripes']='shared'
for f in 'commands connections forwarded rejectedConns'.split(): FIELD['counters.'+f]='cmds'
