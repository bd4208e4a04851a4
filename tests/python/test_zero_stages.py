"""ZeRO stages 1, 2 and 3 through the binding train the torch MLP to the parameters stage 0 does,
in fp32, fp16 and bf16 (2 ranks, train.py --mode strata on a small synthetic data set, the same
initial values and order for every run).

Metric, per parameter tensor: max |stage s - stage 0| / max |stage 0|.
- fp32: <= 1e-6 (the figure tests/dp holds the C++ host's stages to; only the summation order
  of the gradient norm and of reductions differs between stages).
- fp16/bf16: the parameters the host sees are the model-dtype copies, so a master value that
  differs by one fp32 ulp can round to a neighbouring half value; after that the runs differ by
  whole half ulps. Tolerance: 2 ulps of the format at the tensor's largest magnitude, relative:
  2 * 2^-10 (fp16, 10 fraction bits) and 2 * 2^-7 (bf16, 7 fraction bits).
The runs are also checked to differ between precisions, so an override that did nothing fails.
"""
import os

import numpy as np
import pytest

from conftest import MANIFEST, PYTHON, TRAIN_PY, read_cpp_params, run_ranks

STEPS = 12
PRECISIONS = {
    "fp32": ({}, 1e-6),
    "fp16": ({"fp16": {"enabled": True}}, 2 * 2.0 ** -10),
    "bf16": ({"bf16": {"enabled": True}}, 2 * 2.0 ** -7),
}
STAGES = (0, 1, 2, 3)


def train(out_dir, data_dir, precision, stage):
    import json
    patch = dict(PRECISIONS[precision][0])
    patch["zero_optimization"] = {"stage": stage}
    path = os.path.join(out_dir, f"{precision}.stage{stage}.bin")
    if os.path.exists(path):
        os.remove(path)
    r = run_ranks(2, [PYTHON, TRAIN_PY, "--mode", "strata", "--manifest", MANIFEST,
                      "--overrides", json.dumps(patch), "--batch", "64", "--epochs", "1",
                      "--max-steps", str(STEPS), "--data-dir", data_dir,
                      "--seed", "3", "--threads", "1", "--dump-params", path], timeout=90)
    assert r.returncode == 0, f"{precision} stage {stage} failed:\n{r}"
    assert f"step {STEPS}" in r.output
    return read_cpp_params(path)


@pytest.fixture(scope="module")
def runs(work_dir, synthetic_data):
    out = os.path.join(work_dir, "stages")
    os.makedirs(out, exist_ok=True)
    cache = {}

    def get(precision, stage):
        if (precision, stage) not in cache:
            cache[(precision, stage)] = train(out, synthetic_data, precision, stage)
        return cache[(precision, stage)]
    return get


def tensor_relative(a, b):
    return {k: float(np.max(np.abs(a[k].astype(np.float64) - b[k])) / np.max(np.abs(a[k])))
            for k in a}


@pytest.mark.parametrize("precision", list(PRECISIONS))
@pytest.mark.parametrize("stage", STAGES[1:])
def test_stage_equals_stage0(runs, precision, stage):
    tolerance = PRECISIONS[precision][1]
    diffs = tensor_relative(runs(precision, 0), runs(precision, stage))
    worst = max(diffs.values())
    print(f"{precision} stage {stage} vs stage 0: max tensor-relative difference {worst:.3e} "
          f"(tolerance {tolerance:.3e}; {', '.join(f'{k} {v:.2e}' for k, v in diffs.items())})")
    assert worst <= tolerance


@pytest.mark.parametrize("precision", ["fp16", "bf16"])
def test_precision_changes_the_result(runs, precision):
    """The override took effect: half precision ends measurably away from fp32."""
    diffs = tensor_relative(runs("fp32", 0), runs(precision, 0))
    worst = max(diffs.values())
    print(f"{precision} vs fp32 at stage 0: max tensor-relative difference {worst:.3e}")
    assert worst > PRECISIONS["fp32"][1] * 10
