"""Rank script for test_faults.py: trains a small MLP through strata.torch; at step SKIP_STEP rank
SKIP_RANK computes its output with the first layer detached, so that layer's parameters get no
gradient on that rank only. The job must end with the runtime's error on every rank, not hang.

  skip_grad.py MANIFEST SKIP_RANK SKIP_STEP
"""
import sys

import torch
import torch.nn.functional as F

import strata.torch as st

manifest, skip_rank, skip_step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
opt = st.DistributedOptimizer(None, model, manifest=manifest,
                              overrides={"train_batch_size": 16,
                                         "train_micro_batch_size_per_gpu": None})
rank = opt.world[0]
gen = torch.Generator().manual_seed(100 + rank)
for step in range(1, 11):
    x = torch.randn(8, 16, generator=gen)
    y = torch.randint(0, 4, (8,), generator=gen)
    if rank == skip_rank and step == skip_step:
        print(f"rank {rank}: step {step}: layer 0 left without gradient", flush=True)
        out = model[2](model[1](model[0](x).detach()))
    else:
        out = model(x)
    loss = F.cross_entropy(out, y)
    opt.scale_loss(loss).backward()
    result = opt.step()
    print(f"rank {rank}: step {step}: {result.outcome}", flush=True)
opt.close()
print(f"rank {rank}: finished all steps", flush=True)
