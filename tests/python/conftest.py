"""Shared helpers for the Python tests: where things are (from the environment tests/python's
CMakeLists.txt sets) and how to start ranks with mpirun, with a bounded time.

Run outside ctest with the same variables, e.g.
  STRATA_LIBRARY=build/lib/libstrata.so PYTHONPATH=sdk/python STRATA_TEST_FASHION_MNIST=... \
  /usr/bin/python3 -m pytest -v -s tests/python/test_collectives.py
"""
import gzip
import os
import shlex
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("STRATA_TEST_SOURCE_DIR", os.path.normpath(os.path.join(HERE, "..", "..")))
PYTHON = os.environ.get("STRATA_TEST_PYTHON", sys.executable)
TRAIN_PY = os.path.join(SOURCE_DIR, "examples", "fashion_mnist_torch", "train.py")
RANKS_DIR = os.path.join(HERE, "ranks")
MANIFEST = os.path.join(SOURCE_DIR, "examples", "manifests", "default.json")


def required_env(name):
    value = os.environ.get(name, "")
    if not value:
        raise RuntimeError(f"environment variable {name} is not set: run these tests through "
                           f"ctest (tests/python/CMakeLists.txt sets it) or set it yourself")
    return value


def mpirun():
    return shlex.split(os.environ.get("STRATA_TEST_MPIRUN", "mpirun --allow-run-as-root --oversubscribe"))


class Run:
    def __init__(self, argv, returncode, output, seconds, timed_out):
        self.argv, self.returncode, self.output = argv, returncode, output
        self.seconds, self.timed_out = seconds, timed_out

    def __str__(self):
        return (f"$ {shlex.join(self.argv)}\nexit {self.returncode} after {self.seconds:.1f} s"
                f"{' (timed out)' if self.timed_out else ''}\n{self.output}")


def run(argv, timeout=60, env=None, cwd=None):
    """Runs argv in its own process group, stdout and stderr together; on timeout the whole group
    is killed (SIGTERM, then SIGKILL). Prints what ran, how long it took and its output."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    start = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=full_env,
                            cwd=cwd, start_new_session=True, text=True, errors="replace")
    timed_out = False
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                output, _ = proc.communicate(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            output = ""
    result = Run(argv, proc.returncode, output, time.monotonic() - start, timed_out)
    print(result, flush=True)
    return result


def free_port():
    """A TCP port nothing listens on now (for torch.distributed's MASTER_PORT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(np_, argv, timeout=60, env=None):
    """argv on np_ ranks under the project's mpirun."""
    return run(mpirun() + ["-np", str(np_)] + list(argv), timeout=timeout, env=env)


def run_python_ranks(np_, script, args=(), timeout=60, env=None):
    return run_ranks(np_, [PYTHON, script] + list(args), timeout=timeout, env=env)


# ---- a small synthetic data set in the idx format train.py reads -----------------------------


def _write_idx(path, array, magic):
    header = np.array([magic] + list(array.shape), dtype=">u4").tobytes()
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(header + np.ascontiguousarray(array, dtype=np.uint8).tobytes())


def write_synthetic_fashion_mnist(folder, train=2048, test=512, seed=7):
    """Fashion-MNIST-shaped idx files: each class a random prototype image plus noise (learnable
    in a few steps, like the C++ host's make_synthetic). Small, so runs start fast."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    prototypes = rng.integers(0, 256, size=(10, 28, 28))
    for split, count in (("train", train), ("t10k", test)):
        labels = rng.integers(0, 10, size=count)
        noise = rng.integers(-64, 65, size=(count, 28, 28))
        images = np.clip(prototypes[labels] + noise, 0, 255).astype(np.uint8)
        _write_idx(os.path.join(folder, f"{split}-images-idx3-ubyte.gz"), images, 0x803)
        _write_idx(os.path.join(folder, f"{split}-labels-idx1-ubyte.gz"),
                   labels.astype(np.uint8), 0x801)
    return folder


@pytest.fixture(scope="session")
def work_dir():
    path = os.environ.get("STRATA_TEST_WORK") or os.path.join(os.getcwd(), "strata-python-work")
    os.makedirs(path, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def synthetic_data(work_dir):
    return write_synthetic_fashion_mnist(os.path.join(work_dir, "synthetic-data"))


def read_cpp_params(path):
    sys.path.insert(0, os.path.dirname(TRAIN_PY))
    from mlp import read_cpp_params as read
    return read(path)
