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


# ---- the torch example, examples/fashion_mnist_torch/train.py ---------------------------------

from conftest import PYTHON, TRAIN_PY, read_cpp_params  # noqa: E402

TRAIN_COMMON = ["--batch", "128", "--epochs", "2", "--seed", "3", "--threads", "1"]  # 16 steps an epoch


@pytest.fixture(scope="module")
def train_runs(work_dir, synthetic_data):
    base = os.path.join(work_dir, "checkpoint_block_train")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    block = '{"checkpoint": {"dir": "%s", "save_every": 4, "auto_resume": true}}' % os.path.join(base, "ck")
    runs = {}
    # Uninterrupted 20 steps; 10 steps saving at 4 and 8; then 20 again, resuming at 8 mid-epoch.
    for label, overrides, steps in (("whole", None, 20), ("stopped", block, 10), ("resumed", block, 20)):
        dump = os.path.join(base, f"{label}.bin")
        argv = [PYTHON, TRAIN_PY, "--data-dir", synthetic_data, "--max-steps", str(steps), "--dump-params", dump]
        if overrides is not None:
            argv += ["--overrides", overrides]
        r = run_python_ranks(2, argv[1], argv[2:] + TRAIN_COMMON, timeout=150)
        assert r.returncode == 0, f"{label} failed:\n{r}"
        runs[label] = (r, dump)
    return runs


def test_train_py_resumes_where_its_data_left_off(train_runs):
    output = train_runs["resumed"][0].output
    assert "resumed from global_step8: global step 8, epoch 1 step 8" in output, output
    assert "step 20" in output


def test_train_py_resumed_equals_uninterrupted(train_runs):
    whole, resumed = read_cpp_params(train_runs["whole"][1]), read_cpp_params(train_runs["resumed"][1])
    for name in whole:
        assert (whole[name] == resumed[name]).all(), name
