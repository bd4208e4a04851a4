"""DistributedOptimizer given only named_parameters (host-owned gradient buffers, no parameter
groups; f16/bf16 values copied into the module after each step) trains to exactly the parameters
it does given the nn.Module (groups, lent gradient buffers, values copied in from forward hooks):
2 ranks, 10 steps, fp32 and fp16, with gradient accumulation 2 for fp32."""
import json
import os

import pytest
import torch

from conftest import MANIFEST, RANKS_DIR, run_python_ranks

SCRIPT = os.path.join(RANKS_DIR, "small_mlp.py")
CASES = {
    "fp32": {"train_batch_size": 16},
    "fp32_accumulation2": {"train_batch_size": 32, "gradient_accumulation_steps": 2},
    "fp16": {"train_batch_size": 16, "fp16": {"enabled": True}},
}


def train(work_dir, case, how):
    out = os.path.join(work_dir, f"{case}.{how}.pt")
    if os.path.exists(out):
        os.remove(out)
    r = run_python_ranks(2, SCRIPT, [MANIFEST, json.dumps(CASES[case]), how, out], timeout=90)
    assert r.returncode == 0, str(r)
    return torch.load(out), torch.load(out + ".initial")


@pytest.mark.parametrize("case", list(CASES))
def test_named_parameters_train_like_the_module(work_dir, case):
    (module, initial), (named, _) = train(work_dir, case, "module"), train(work_dir, case, "named")
    worst = max(float((a - b).abs().max()) for a, b in zip(module, named))
    moved = min(float((a - b).abs().max()) for a, b in zip(module, initial))
    print(f"{case}: module vs named_parameters: max |difference| {worst:.3e}; every tensor "
          f"moved by at least {moved:.3e}")
    assert moved > 1e-3  # gradients reached the optimizer: equality is not of untrained values
    assert worst == 0.0
