"""The manifest's checkpoint block through strata.torch (API 1.11, 2 ranks): a run stopped after 5
of 8 steps, saving every 2, then started again with the same block, resumes from global_step4 by
itself (resumed() gives the host state saved with it) and ends with the parameters of an
uninterrupted 8-step run, bit for bit. A first run finds no checkpoint and starts fresh."""
import os
import shutil

import pytest
import torch

from conftest import MANIFEST, RANKS_DIR, run_python_ranks

SCRIPT = os.path.join(RANKS_DIR, "auto_checkpoint.py")


@pytest.fixture(scope="module")
def runs(work_dir):
    base = os.path.join(work_dir, "checkpoint_block")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    folder = os.path.join(base, "ck")
    results = {}
    for label, block, stop_after in (("whole", "-", 8), ("stopped", folder, 5), ("resumed", folder, 8)):
        out = os.path.join(base, f"{label}.pt")
        r = run_python_ranks(2, SCRIPT, [MANIFEST, block, "8", str(stop_after), out], timeout=120)
        assert r.returncode == 0, f"{label} failed:\n{r}"
        results[label] = (r, out)
        if label == "stopped":
            saved_after_stop = sorted(d for d in os.listdir(folder) if d.startswith("global_step"))
    return saved_after_stop, results


def test_first_run_starts_fresh_and_saves(runs):
    saved, results = runs
    assert "fresh" in results["stopped"][0].output
    assert "rank 0: finished at step 5" in results["stopped"][0].output
    assert saved == ["global_step2", "global_step4"]


def test_second_run_resumes_with_the_host_state(runs):
    _, results = runs
    output = results["resumed"][0].output
    assert "resumed global_step4 {'next_step': 4}" in output, output
    assert "rank 0: finished at step 8" in output


def test_resumed_run_equals_the_uninterrupted_one(runs):
    _, results = runs
    whole, resumed = torch.load(results["whole"][1]), torch.load(results["resumed"][1])
    assert whole.keys() == resumed.keys()
    for name in whole:
        assert torch.equal(whole[name], resumed[name]), name
