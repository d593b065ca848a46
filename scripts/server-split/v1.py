ORDER=['peer','core','repair','cmds','node']
def FILE_DEFAULT(f):
    if f.startswith('peer_messages'): return 'peer'
    if f.startswith('peer'): return 'core'
    if f.startswith('datapath'): return 'core'
    if f.startswith('cmd_'): return 'cmds'
    if f.startswith('repair_'): return 'repair'
    if f.startswith('schemes_stripe'): return 'node'
    if f.startswith('schemes'): return 'core'
    if f in ('memory.go','metrics.go','workers.go'): return 'core'
    if f in ('conn.go','clientio.go','auth.go'): return 'cmds'
    return 'node'
OVR={}
def put(p,*names):
    for n in names: OVR[n]=p
put('peer','staleEpochPrefix','Node.staleEpoch','staleEpoch','carriesAuthority','unfenced','errFrame','transferTime','bulkRate','forwardWork',
    'peerReq','peerReq.size','peerReq.whole')
put('node','Node.handlePeer','Node.servePeer','Node.peerHandler')
put('cmds','Node.onForward','Node.serveForward','Node.runForwarded','Node.onScan','Node.onFlush')
put('cmds','setGroup','setGroup.has','setGroup.add','setGroup.touches','setGroup.flush','groupSeed','setSpec','maxSetGroup','Node.joins')
put('node','Node.compactLoop','compactable','compactEvery')
put('core','Node.valueOp','Node.set','Node.overwritesStub','Node.filledMeta','Node.peekLocked','peeked','Node.retimeOp')
put('node','kinds','schemeEnv.Stripes')
put('core','Node.rehomePacked','rehomeBatch')
put('repair','packedCandidates','newestLive','Node.startStripeRestores')
put('core','leaseFraction','lease','lease.changed','lease.notify','Node.monoNow','Node.leaseLength','Node.renew','Node.serving',
    'errLeaseGone','Node.leased','authority','Node.takeAuthority','Node.stillHolds','Node.awaitLease')
put('cmds','errLeaseLapsed','errReadLapsed','Node.withinLease','errFenced','Node.refuseKeys')
put('repair','Node.jobLoop')
put('node','Node.expireCycle','Node.expireSample','expireEvery','expireBatch','expireBudget')
put('core','Node.expireKey','Node.expireLater','expireQueueSize')
put('core','counters','counters.detachedBytes')
put('core','recordStub','isStub','Node.fillStub','Node.completeStub','Node.loseStub','errStubReplaced')
put('core','integrity','Node.repairRecord','Node.repairLater','Node.repairKey','isCorruptReply','Node.onRepair')
put('cmds','Node.cmdDebug','cmdDebug','Node.listOwnPieces','faultReply','Node.flipCopies','init@repair_scrub.go')
put('core','pieceFilter','everyPiece','Node.rebuildKey')
put('core','unfinishedDeletion','unfinishedDeletions','unfinishedDeletions.add','unfinishedDeletions.take','maxUnfinishedDeletions')
put('node','Node.checkOwnPassword')
put('core','notLeaderPrefix','Node.propose','Node.toLeader','Node.callAddr','leaderHint','unwrapRemote','Node.resolveScheme')
FIELD={}
for f in 'cfg log id started failureClock ctl primary pieces peers leases inflight groups clock stats metrics lease lost unfinished directory bound moves health memUsed expireQ workers'.split():
    FIELD['Node.'+f]='core'
for f in 'clients resp'.split(): FIELD['Node.'+f]='cmds'
for f in 'recovering rebuilding restoring rebuild'.split(): FIELD['Node.'+f]='repair'
for f in 'incarnation detector trust ownPassword failed mux raftLn framesLn peerSrv http stop bg closeErr once stripes'.split(): FIELD['Node.'+f]='node'
for f in 'fresh restarted failingSelf hint probe'.split(): FIELD['lease.'+f]='node'
