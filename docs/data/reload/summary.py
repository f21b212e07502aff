import sys, statistics as st, collections
d=collections.defaultdict(dict)
for l in open(sys.argv[1]):
    r,b,t,s=l.split(); d[(b,int(r))][t]=float(s)
for b in ['innodb','myisam']:
    rs=sorted(r for (bb,r) in d if bb==b)
    med=lambda t: st.median(d[(b,r)][t] for r in rs)
    rat=lambda a,c: sorted(d[(b,r)][c]/d[(b,r)][a] for r in rs)
    print(f"{b}: n={len(rs)} wall median old {med('old'):.3f} new {med('new'):.3f} native {med('native'):.3f} s;"
          f" native/new per round median {st.median(rat('new','native')):.3f} [{min(rat('new','native')):.3f}-{max(rat('new','native')):.3f}];"
          f" native/old {st.median(rat('old','native')):.3f} [{min(rat('old','native')):.3f}-{max(rat('old','native')):.3f}];"
          f" old/new (speed-up) {st.median(rat('new','old')):.3f} [{min(rat('new','old')):.3f}-{max(rat('new','old')):.3f}]")
