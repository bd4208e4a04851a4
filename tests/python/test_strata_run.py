"""train.py started by the project's launcher, strata-run, rather than mpirun: with --backend gloo
(no MPI in the processes: rank, size, MASTER_ADDR/MASTER_PORT and STRATA_COMM_LIBRARY from the
launcher), in strata mode (the runtime over the gloo comm plugin) and in ddp mode (torch's gloo on
the launcher's MASTER_PORT); and with the default (MPI) backend in strata mode. The three runs
start from the same values (--seed) and order and must end within 1e-5 of each other (2 ranks, a
small synthetic data set, 12 steps)."""
import os

import numpy as np
import pytest

from conftest import PYTHON, TRAIN_PY, read_cpp_params, required_env, run

TOLERANCE = 1e-5
COMMON = ["--batch", "64", "--epochs", "1", "--max-steps", "12", "--seed", "5", "--threads", "1"]


@pytest.fixture(scope="module")
def dumps(work_dir, synthetic_data):
    launcher = required_env("STRATA_TEST_STRATA_RUN")
    out = os.path.join(work_dir, "strata_run")
    os.makedirs(out, exist_ok=True)
    paths = {}
    for label, backend, mode in (("gloo_strata", "gloo", "strata"), ("gloo_ddp", "gloo", "ddp"),
                                 ("mpi_strata", "mpi", "strata")):
        path = paths[label] = os.path.join(out, f"{label}.bin")
        if os.path.exists(path):
            os.remove(path)
        r = run([launcher, "--backend", backend, "-np", "2", "--", PYTHON, TRAIN_PY,
                 "--mode", mode, "--data-dir", synthetic_data, "--dump-params", path] + COMMON,
                timeout=120)
        assert r.returncode == 0, f"{label} failed:\n{r}"
        assert f"mode {mode}, 2 ranks" in r.output
        assert "step 12" in r.output
        if label == "gloo_strata":
            assert "comm=allreduce-gloo" in r.output, "the gloo comm plugin did not run"
    return paths


def max_difference(a_path, b_path):
    a, b = read_cpp_params(a_path), read_cpp_params(b_path)
    return max(float(np.max(np.abs(a[k].astype(np.float64) - b[k]))) for k in a)


@pytest.mark.parametrize("a, b", [("gloo_strata", "mpi_strata"), ("gloo_ddp", "gloo_strata")])
def test_same_parameters(dumps, a, b):
    worst = max_difference(dumps[a], dumps[b])
    print(f"{a} vs {b}: max |difference| {worst:.3e}")
    assert worst <= TOLERANCE
