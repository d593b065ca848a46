import collections,sys
src=open('/tmp/splitwork/split.py').read().split("# lines")[0]
exec(src)
by=collections.defaultdict(lambda: collections.defaultdict(list))
for f,n,k,s,ln in decls:
    if f.endswith('_test.go'): continue
    if n.startswith('Node.'): by[declpkg[n]][f].append(n[5:])
for p in ['core','repair','cmds','peer','node']:
    tot=sum(len(v) for v in by[p].values())
    print(f'\n[{p}] {tot} methods now on *Node:')
    for f in sorted(by[p]): print(f'  {f}: '+' '.join(by[p][f]))
