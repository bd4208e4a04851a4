"""Measures what a rank holds after opt.step() when training a model of known size through
strata.torch, and prints one line per rank that the test reads:

    memory rank R model_bytes M baseline_rss B rss_after_step A runtime_bytes T grads_bytes G peak_rss P
    construction rank R peak_rss C runtime_peak_bytes Q

model_bytes: the model's parameters in fp32; baseline_rss: the process before the model existed
(torch imported, the runtime not yet created); rss_after_step: after the last step, from
/proc/self/statm; runtime_bytes: the runtime's memory report (every category, current), of which
grads_bytes are gradients (at stages 2-3 the gradient partition, which holds no pages between
steps);
peak_rss: ru_maxrss. All in bytes.

construction: ru_maxrss once DistributedOptimizer exists (before any step), and the sum of the
runtime's peak report then, less its gradients (not yet resident).

    zero3_memory.py MANIFEST OVERRIDES_JSON LAYERS WIDTH [cpu|meta]

meta: the layers are built on the meta device (strata.torch writes them one group at a time,
with each Linear's reset_parameters()).
"""
import ctypes
import gc
import json
import os
import resource
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import strata.torch as st


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def settle():
    gc.collect()
    ctypes.CDLL(None).malloc_trim(0)


def main():
    manifest, overrides = sys.argv[1], json.loads(sys.argv[2])
    layers, width = int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    settle()
    baseline = rss_bytes()
    device = sys.argv[5] if len(sys.argv) > 5 else "cpu"
    model = nn.Sequential(*[nn.Linear(width, width, device=device) for _ in range(layers)])
    model_bytes = sum(p.numel() for p in model.parameters()) * 4
    opt = st.DistributedOptimizer(torch.optim.AdamW(model.parameters(), lr=1e-3), model,
                                  manifest=manifest, overrides=overrides)
    world = opt.world
    # The gradient partition is counted from finalize on but holds no pages until backward
    # delivers into it (plugins/zero's PageBuffer): it is not part of the construction's RSS.
    peak = opt.runtime.memory()["peak"]
    print("construction rank %d peak_rss %d runtime_peak_bytes %d" % (
        world.rank, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        sum(peak.values()) - peak["grads"]), flush=True)
    g = torch.Generator().manual_seed(1)
    for _ in range(2):
        x = torch.randn(4, width, generator=g)
        loss = F.mse_loss(model(x), x)
        opt.scale_loss(loss).backward()
        assert opt.step().outcome == "applied"
    del x, loss
    settle()
    after = rss_bytes()
    report = opt.runtime.memory()["current"]
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print("memory rank %d model_bytes %d baseline_rss %d rss_after_step %d runtime_bytes %d "
          "grads_bytes %d peak_rss %d" % (world.rank, model_bytes, baseline, after,
                                          sum(report.values()), report["grads"], peak_rss),
          flush=True)
    print("rank %d report %s peak %s" % (world.rank, report, opt.runtime.memory()["peak"]), flush=True)
    opt.close(materialize=False)


if __name__ == "__main__":
    main()
