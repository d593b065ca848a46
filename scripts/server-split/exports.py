import collections,sys
src=open('/tmp/splitwork/split.py').read().split("# lines")[0].replace("exec(open(sys.argv[1]).read())","exec(open(sys.argv[1]).read())")
exec(src)
ex=collections.defaultdict(lambda: collections.defaultdict(set))
for uf,ud,df,dn,k,c in uses:
    if uf.endswith('_test.go'): continue
    up=declpkg.get(ud) or FILE_DEFAULT(uf)
    dp=pkg_of_obj(df,dn,k)
    if up!=dp and dn!='Node':
        ex[dp][(dn,k)].add(up)
for p in ORDER+['shared','node?']:
    if p not in ex: continue
    d=ex[p]
    unexp=[x for x in d if not x[0].split('.')[-1][0].isupper()]
    print(f'\n#### {p}: {len(d)} identifiers used from outside, {len(unexp)} need exporting')
    for (dn,k),us in sorted(d.items(), key=lambda x:(x[0][1],x[0][0])):
        flag='' if dn.split('.')[-1][0].isupper() else '*'
        print(f'  {flag}{dn} [{k}] <- {",".join(sorted(us))}')
