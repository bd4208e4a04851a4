"""strata_join through strata.torch (API 1.12): 3 ranks with 5, 3 and 1 micro-batches, each calling
opt.join() when its data ends, end with the parameters of one rank whose step k averages the losses
of the micro-batches the running ranks have at step k, at ZeRO stages 0 and 3 (the module's
partitioned parameters gathered by the hooks of the joined rank's replay). tests/elastic's
join_test.py covers stages 0-3 through the C++ SDK."""
import json
import os
import shutil

import pytest
import torch

from conftest import RANKS_DIR, run_python_ranks

SCRIPT = os.path.join(RANKS_DIR, "uneven_join.py")
COUNTS = "5,3,1"


def manifest(path, stage):
    with open(path, "w") as f:
        json.dump({
            "comm": {"library": "strata_allreduce_mpi"},
            "sharding": {"library": "strata_zero"},
            "precision": {"library": "strata_amp"},
            "offload": {"library": "strata_offload"},
            "train_micro_batch_size_per_gpu": 8,
            "gradient_accumulation_steps": 1,
            "optimizer": {"type": "SGD", "params": {"lr": 0.5}},
            "zero_optimization": {"stage": stage, "stage3_param_persistence_threshold": 0},
            "join": True,
        }, f)
    return path


@pytest.mark.parametrize("stage", [0, 3])
def test_uneven_ranks_with_join_equal_one_rank(work_dir, stage):
    base = os.path.join(work_dir, f"join_stage{stage}")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    path = manifest(os.path.join(base, "manifest.json"), stage)
    joined, single = os.path.join(base, "joined.pt"), os.path.join(base, "single.pt")
    r = run_python_ranks(3, SCRIPT, [path, COUNTS, joined], timeout=120)
    assert r.returncode == 0, f"3 ranks failed:\n{r}"
    for rank, mirrored in ((0, 0), (1, 2), (2, 4)):
        assert f"rank {rank}: join mirrored {mirrored}" in r.output, r.output
    r = run_python_ranks(1, SCRIPT, [path, COUNTS, single, "--single"], timeout=120)
    assert r.returncode == 0, f"the single-rank reference failed:\n{r}"
    want = torch.load(single + ".rank0")
    for rank in range(3):
        got = torch.load(f"{joined}.rank{rank}")
        assert got.keys() == want.keys()
        for name in want:
            torch.testing.assert_close(got[name], want[name], rtol=1e-5, atol=1e-6,
                                       msg=f"rank {rank}: {name}")
