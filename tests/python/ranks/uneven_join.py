"""Rank script for test_join.py: a small MLP through strata.torch where rank r has COUNTS[r]
micro-batches and calls opt.join() when its data ends (the manifest's "join": true). With
--single, one rank runs the reference: step k's loss is the mean of the losses of the micro-batches
the ranks still running at step k have. Each micro-batch's data depends only on (rank, k).

  uneven_join.py MANIFEST COUNTS OUT [--single]     (COUNTS: "5,3,1")
Each rank writes its module's final parameters to OUT.rank<R> (torch.save) and prints what
join() returned.
"""
import sys

import torch
import torch.nn.functional as F

import strata.torch as st

manifest, counts, out = sys.argv[1], [int(c) for c in sys.argv[2].split(",")], sys.argv[3]
single = "--single" in sys.argv[4:]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(12, 24), torch.nn.Tanh(), torch.nn.Linear(24, 3))
opt = st.DistributedOptimizer(None, model, manifest=manifest)
rank, world = opt.world[0], opt.world[1]
assert single or world == len(counts), f"{len(counts)} counts for {world} ranks"


def batch(r, k):
    gen = torch.Generator().manual_seed(1000 * k + r)
    return torch.randn(8, 12, generator=gen), torch.randint(0, 3, (8,), generator=gen)


for k in range(max(counts) if single else counts[rank]):
    if single:
        running = [r for r in range(len(counts)) if counts[r] > k]
        loss = sum(F.cross_entropy(model(x), y) for x, y in (batch(r, k) for r in running)) / len(running)
    else:
        x, y = batch(rank, k)
        loss = F.cross_entropy(model(x), y)
    opt.scale_loss(loss).backward()
    opt.step()
if not single:
    print(f"rank {rank}: join mirrored {opt.join()}", flush=True)
state = opt.module_state_dict()
opt.close()
torch.save(state, f"{out}.rank{rank}")  # a joined rank's module holds what every rank holds
