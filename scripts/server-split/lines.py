import collections,sys,subprocess
src=open('/tmp/splitwork/split.py').read().split("# lines")[0]
exec(src)
wc={}
for f in set(d[0] for d in decls):
    if not f.endswith('_test.go'):
        wc[f]=int(subprocess.check_output(['wc','-l','/work/main/server/'+f]).split()[0])
wc['doc.go']=6
byfile=collections.defaultdict(collections.Counter)
for f,n,k,s,ln in decls:
    if f.endswith('_test.go'): continue
    byfile[f][declpkg[n]]+=int(ln)+1
tot=collections.Counter(); newfiles=collections.Counter()
for f,c in byfile.items():
    s=sum(c.values()); main=max(c,key=c.get)
    for p,v in c.items():
        if p==main: tot[p]+= wc[f]-sum(x for q,x in c.items() if q!=main)
        else: tot[p]+=v+12; newfiles[p]+=1
tot[FILE_DEFAULT('doc.go')]+=6
print(dict(tot), sum(tot.values()))
