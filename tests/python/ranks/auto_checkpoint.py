"""Rank script for test_checkpoint_block.py: a small MLP through strata.torch whose manifest's
checkpoint block (API 1.11) saves every 2 steps into DIR and resumes from DIR's latest checkpoint at
construction. The host keeps its data position (the next step) with set_host_state and reads it
back from resumed(). Each step's data depends only on the step number, so a run resumed part-way
sees the very samples an uninterrupted run sees.

  auto_checkpoint.py MANIFEST DIR STEPS STOP_AFTER OUT   (DIR "-": no checkpoint block)
Rank 0 writes the final parameters to OUT (torch.save) and prints "resumed TAG EXTRA" or "fresh".
"""
import sys

import torch
import torch.nn.functional as F

import strata.torch as st

manifest, folder, steps, stop_after, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
overrides = {"train_batch_size": 16, "train_micro_batch_size_per_gpu": None}
if folder != "-":
    overrides["checkpoint"] = {"dir": folder, "save_every": 2, "auto_resume": True}
opt = st.DistributedOptimizer(None, model, manifest=manifest, overrides=overrides)
rank = opt.world[0]
resumed = opt.resumed()
first = resumed.extra["next_step"] if resumed is not None else 0
if rank == 0:
    print(f"resumed {resumed.tag} {resumed.extra}" if resumed is not None else "fresh", flush=True)
done = 0
for step in range(first, steps):
    if done == stop_after:
        break
    gen = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(8, 16, generator=gen)
    y = torch.randint(0, 4, (8,), generator=gen)
    loss = F.cross_entropy(model(x), y)
    opt.scale_loss(loss).backward()
    opt.set_host_state({"next_step": step + 1})  # where the data continues after this step
    opt.step()
    done += 1
state = opt.module_state_dict()
opt.close()
if rank == 0:
    torch.save(state, out)
print(f"rank {rank}: finished at step {first + done}", flush=True)
