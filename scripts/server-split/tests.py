import collections,sys
exec(open('/tmp/splitwork/split.py').read().split("# lines")[0].replace("exec(open(sys.argv[1]).read())","exec(open(''+sys.argv[1]+'').read())"))
tu=collections.defaultdict(lambda: collections.defaultdict(set))
for uf,ud,df,dn,k,c in uses:
    if not uf.endswith('_test.go'): continue
    if df.endswith('_test.go'):
        tu[(uf,ud)]['TEST'].add(dn); continue
    dp=pkg_of_obj(df,dn,k)
    tu[(uf,ud)][dp].add(dn)
for (f,d) in sorted(tu):
    print(f'{f} {d}: '+' | '.join(f'{p}: '+' '.join(sorted(s)) for p,s in sorted(tu[(f,d)].items()) if p not in ('config',)))
