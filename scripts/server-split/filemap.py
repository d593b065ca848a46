import collections,sys
src=open('/tmp/splitwork/split.py').read().split("# lines")[0]
exec(src)
byfile=collections.defaultdict(lambda: collections.defaultdict(list))
for f,n,k,s,ln in decls:
    if f.endswith('_test.go'): continue
    byfile[f][declpkg[n]].append((n,int(ln)))
for f in sorted(byfile):
    d=byfile[f]
    if len(d)==1:
        p=list(d)[0]; print(f'{f}: all -> {p}')
    else:
        tot={p:sum(x[1] for x in v) for p,v in d.items()}
        main=max(tot,key=tot.get)
        print(f'{f}: mostly -> {main} ({tot[main]} decl lines); ' + '; '.join(f'{p} ({tot[p]}): '+', '.join(n for n,_ in v) for p,v in d.items() if p!=main))
