"""One rank (or more): a model trained through strata.torch.DistributedOptimizer given a torch
optimizer must follow the same trajectory as that torch optimizer run by torch itself, including a
torch LR scheduler's changes (the binding passes them on with strata_set_lr).

    torch_optimizers.py MANIFEST KIND STEPS   (KIND: adam, adamw, sgd, sgd_nesterov)

Prints `max_relative_difference=<x>` (over parameters, |strata - torch| / max |torch|) and exits 1
when it is above 1e-5."""
import copy
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import strata
import strata.torch as st


def make(kind, params):
    if kind == "adam":
        return torch.optim.Adam(params, lr=3e-3, betas=(0.8, 0.99), eps=1e-7, weight_decay=0.05)
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=3e-3, betas=(0.85, 0.995), weight_decay=0.1)
    if kind == "sgd":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01)
    if kind == "sgd_nesterov":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)
    raise SystemExit("unknown optimizer kind " + kind)


def main():
    manifest, kind, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    torch.manual_seed(3)
    reference = nn.Sequential(nn.Linear(12, 9), nn.Tanh(), nn.Linear(9, 5))
    model = copy.deepcopy(reference)
    ref_opt = make(kind, reference.parameters())
    torch_opt = make(kind, model.parameters())
    # No clipping in this comparison: torch's optimizers do not clip.
    opt = st.DistributedOptimizer(torch_opt, model, manifest=manifest,
                                  overrides={"gradient_clipping": 0, "scheduler": None,
                                             "train_batch_size": 16 * strata_world_size(),
                                             "train_micro_batch_size_per_gpu": None})
    ref_sched = torch.optim.lr_scheduler.StepLR(ref_opt, step_size=5, gamma=0.5)
    sched = torch.optim.lr_scheduler.StepLR(torch_opt, step_size=5, gamma=0.5)
    world = opt.world
    g = torch.Generator().manual_seed(11)
    for step in range(steps):
        x = torch.randn(16 * world.size, 12, generator=g)
        y = torch.randint(0, 5, (16 * world.size,), generator=g)
        ref_opt.zero_grad()
        F.cross_entropy(reference(x), y).backward()
        ref_opt.step()
        ref_sched.step()
        mine = slice(16 * world.rank, 16 * (world.rank + 1))
        loss = F.cross_entropy(model(x[mine]), y[mine])
        opt.scale_loss(loss).backward()
        result = opt.step()
        assert result.outcome == "applied", result
        sched.step()
    final = opt.module_state_dict()  # collective; whole at every stage
    worst = 0.0
    for (name, a), b in zip(reference.named_parameters(), final.values()):
        worst = max(worst, float((a - b).abs().max() / a.abs().max()))
    print("rank %d %s max_relative_difference=%.3g lr=%g" % (world.rank, kind, worst, opt.runtime.lr))
    sys.exit(0 if worst <= 1e-5 else 1)


def strata_world_size():
    import os
    for name in ("OMPI_COMM_WORLD_SIZE", "WORLD_SIZE"):
        if os.environ.get(name):
            return int(os.environ[name])
    return 1


if __name__ == "__main__":
    main()
