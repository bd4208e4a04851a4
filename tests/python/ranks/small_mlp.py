"""Trains a small MLP through strata.torch.DistributedOptimizer for 10 steps on fixed random data
and has rank 0 write the final parameters (torch.save of a list of tensors) to OUT and the
initial ones (every rank's are rank 0's: seeded alike) to OUT.initial.

    small_mlp.py MANIFEST OVERRIDES_JSON module|named OUT

`module` hands the optimizer the nn.Module (groups gathered from hooks), `named` only
model.named_parameters() (host-owned gradient buffers, no groups): two paths of the binding that
must train to the same parameters."""
import json
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import strata.torch as st


def main():
    manifest, overrides, how, out = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 4))
    handed = model if how == "module" else model.named_parameters()
    initial = [p.detach().clone() for p in model.parameters()]
    opt = st.DistributedOptimizer(None, handed, manifest=manifest, overrides=overrides)
    world, micro = opt.world, opt.training.micro_batch_size
    g = torch.Generator().manual_seed(1)
    x_all, y_all = torch.randn(64, 20, generator=g), torch.randint(0, 4, (64,), generator=g)
    for step in range(10):
        for m in range(opt.training.gradient_accumulation_steps):
            first = (step * 8 + m * world.size + world.rank) * micro % 64
            x, y = x_all[first:first + micro], y_all[first:first + micro]
            opt.scale_loss(F.cross_entropy(model(x), y)).backward()
            result = opt.step()
    assert result.outcome == "applied", result
    final = list(opt.module_state_dict().values())  # collective; whole at every stage
    if world.rank == 0:
        torch.save(final, out)
        torch.save(initial, out + ".initial")
    opt.close()


if __name__ == "__main__":
    main()
