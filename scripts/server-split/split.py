import collections, sys, json
W='/tmp/splitwork/'
decls=[l.rstrip('\n').split('\t') for l in open(W+'x.decls')]
uses=[l.rstrip('\n').split('\t') for l in open(W+'uses.tsv')]
headers=dict((l.split()[0],int(l.split()[1])) for l in open(W+'headers.txt'))
exec(open(sys.argv[1]).read())   # defines FILE_DEFAULT(fn)->pkg, OVR dict, FIELD dict, ORDER list
declpkg={}
declfile={}
for f,n,k,s,ln in decls:
    declfile[n]=f
def pkg_of_decl(f,n):
    if n in OVR: return OVR[n]
    return FILE_DEFAULT(f)
for f,n,k,s,ln in decls:
    declpkg[n]=pkg_of_decl(f,n)
def pkg_of_obj(deffile,name,kind):
    if kind=='field':
        if name in FIELD: return FIELD[name]
        owner=name.split('.')[0]
        if owner=='Node': return 'node?'
        # nested owner e.g. lease.hint
        if name.rsplit('.',1)[0] in FIELD: return FIELD[name.rsplit('.',1)[0]]
        return declpkg.get(owner, FILE_DEFAULT(deffile))
    if kind=='imethod': return FILE_DEFAULT(deffile)
    return declpkg.get(name, FILE_DEFAULT(deffile))
# lines
lines=collections.Counter(); filesper=collections.defaultdict(set)
for f,n,k,s,ln in decls:
    if f.endswith('_test.go'): continue
    p=declpkg[n]; lines[p]+=int(ln)+1; filesper[p].add(f)
for p in filesper:
    for f in filesper[p]: lines[p]+=headers[f]
print('LINES', dict(lines), 'total', sum(lines.values()))
# cross uses
cross=collections.defaultdict(lambda: collections.defaultdict(lambda:[0,set()]))
for uf,ud,df,dn,k,c in uses:
    if uf.endswith('_test.go'): continue
    up=declpkg.get(ud) or FILE_DEFAULT(uf)
    dp=pkg_of_obj(df,dn,k)
    if up!=dp:
        e=cross[(up,dp)][(dn,k)]; e[0]+=int(c); e[1].add(ud)
rank={p:i for i,p in enumerate(ORDER)}
for (up,dp) in sorted(cross, key=lambda x:(rank.get(x[0],99),rank.get(x[1],99))):
    d=cross[(up,dp)]
    bad = '' if rank.get(up,99)>rank.get(dp,-1) else '   <<< UPWARD'
    print(f'\n== {up} -> {dp}: {len(d)} identifiers, {sum(v[0] for v in d.values())} uses{bad}')
    for (dn,k),(c,us) in sorted(d.items()):
        print(f'   {dn:38s} {k:7s} {c:3d}   by {" ".join(sorted(us))[:150]}')

print('\n\n##### TESTS')
tu=collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
for uf,ud,df,dn,k,c in uses:
    if not uf.endswith('_test.go') or df.endswith('_test.go'): continue
    dp=pkg_of_obj(df,dn,k)
    tu[uf][dp][dn]+=int(c)
tl=dict((l.split()[0],0) for l in open(W+'headers.txt'))
import subprocess
for f in sorted(tu):
    n=int(subprocess.check_output(['wc','-l','/work/main/server/'+f]).split()[0])
    print(f'\n{f} ({n} lines): '+', '.join(f'{p}={len(d)}' for p,d in sorted(tu[f].items())))
    for p,d in sorted(tu[f].items()):
        print(f'   {p}: '+' '.join(f'{k}' for k,v in sorted(d.items()))[:600])
