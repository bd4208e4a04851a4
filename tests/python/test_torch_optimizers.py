"""A torch optimizer handed to strata.torch.DistributedOptimizer (Adam with L2 decay, AdamW, SGD
with momentum and dampening, SGD with Nesterov), LR scheduler included, follows the trajectory
torch's own optimizer takes on the whole batch: max |strata - torch| / max |torch| <= 1e-5 per
parameter (ranks/torch_optimizers.py checks and prints it on every rank), at 2 ranks."""
import os
import re

import pytest

from conftest import MANIFEST, RANKS_DIR, run_python_ranks

SCRIPT = os.path.join(RANKS_DIR, "torch_optimizers.py")


@pytest.mark.parametrize("kind", ["adam", "adamw", "sgd", "sgd_nesterov"])
def test_torch_optimizer_trajectory(kind):
    r = run_python_ranks(2, SCRIPT, [MANIFEST, kind, "12"], timeout=60)
    assert r.returncode == 0, str(r)
    figures = re.findall(rf"rank (\d) {kind} max_relative_difference=(\S+)", r.output)
    assert sorted(rank for rank, _ in figures) == ["0", "1"], "a rank did not report"
    for _, value in figures:
        assert float(value) <= 1e-5
