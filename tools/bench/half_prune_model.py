#!/usr/bin/env python3
# tools/bench/half_prune_model.py: on data/lj-liquid-131k.h5md (CPU, numpy), the half list's candidate tests an atom in
# dense-walk with and without dropping candidates whose 2j + [S > 0] is at or below every home atom's 2i (issue 15,
# 2026-11-26 20:10Z: id order -21 %, shuffled -7 %). Run from the repository root.
import numpy as np, h5py
exec(open('tools/bench/walk_tests_model.py').read().split('def main():')[0])
pos, box = load('data/lj-liquid-131k.h5md')
pos = pos - np.floor(pos/box)*box; n=len(pos); rc=2.5; rc2=rc*rc
nc=np.maximum(np.floor(box/rc).astype(int),3); cs=box/nc
ci=np.minimum((pos/cs).astype(int),nc-1); lin=(ci[:,0]*nc[1]+ci[:,1])*nc[2]+ci[:,2]
order=np.argsort(lin,kind='stable'); lin_s=lin[order]; starts=np.searchsorted(lin_s,np.arange(nc.prod()+1)); ps=pos[order]; ids=order
def cand_of(cx,cy,cz):
    P=[];I=[]
    for dx in (-1,0,1):
        for dy in (-1,0,1):
            for dz in (-1,0,1):
                x,y,z=cx+dx,cy+dy,cz+dz
                sh=np.array([x//nc[0],y//nc[1],z//nc[2]])*box
                c=((x%nc[0])*nc[1]+(y%nc[1]))*nc[2]+(z%nc[2])
                P.append(ps[starts[c]:starts[c+1]]+sh); I.append(ids[starts[c]:starts[c+1]])
    return np.concatenate(P),np.concatenate(I)
def box_d2(c,lo,hi):
    g=np.maximum(np.maximum(lo-c,c-hi),0.0); return (g*g).sum(axis=1)
for label,perm in (('id order',None),('shuffled',np.random.default_rng(1).permutation(n))):
    idmap = np.arange(n) if perm is None else perm  # new id of atom
    T0=T1=0; steps0=0
    for cx in range(nc[0]):
      for cy in range(nc[1]):
        for cz in range(nc[2]):
          c=(cx*nc[1]+cy)*nc[2]+cz; home=ps[starts[c]:starts[c+1]]; hid=idmap[ids[starts[c]:starts[c+1]]]
          if len(home)==0: continue
          cand,cid=cand_of(cx,cy,cz); cid=idmap[cid]
          lo,hi=home.min(0),home.max(0)
          k=box_d2(cand,lo,hi)<rc2
          T0+=len(home)*int(k.sum())
          k2=k&(cid>hid.min())
          T1+=len(home)*int(k2.sum())
    print(label, 'tests/atom half today %.1f, with min-index prune %.1f (%.0f%%)'%(T0/n,T1/n,100*(T1/T0-1)))
