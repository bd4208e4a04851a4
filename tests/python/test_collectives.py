"""strata.allreduce_/allreduce/broadcast_/broadcast/allgather/barrier on numpy arrays and CPU
torch tensors at 2 ranks: exact values for every dtype the binding moves (float32, float64,
float16, bfloat16 (torch), int32, int64, uint8), in-place calls return the same object with the
same data pointer (no copy), out-of-place calls leave their input alone. ranks/collectives.py does
the checking on each rank; this test asserts both ranks passed every case."""
import os

import pytest

from conftest import MANIFEST, RANKS_DIR, run_python_ranks

SCRIPT = os.path.join(RANKS_DIR, "collectives.py")


@pytest.fixture(scope="module")
def result(work_dir):
    results = os.path.join(work_dir, "collectives")
    os.makedirs(results, exist_ok=True)
    for r in (0, 1):
        path = os.path.join(results, f"rank{r}.txt")
        if os.path.exists(path):
            os.remove(path)
    run = run_python_ranks(2, SCRIPT, [MANIFEST, results], timeout=90)
    lines = {}
    for r in (0, 1):
        path = os.path.join(results, f"rank{r}.txt")
        lines[r] = open(path).read().splitlines() if os.path.exists(path) else []
    return run, lines


def test_both_ranks_finish(result):
    run, lines = result
    assert run.returncode == 0, str(run)
    assert lines[0][-1:] == ["PASS done"] and lines[1][-1:] == ["PASS done"]


@pytest.mark.parametrize("case", [
    "numpy.float32.allreduce_.sum", "numpy.float64.allreduce_.avg", "numpy.int32.allreduce_.max",
    "numpy.int64.allreduce_.min", "numpy.float16.allreduce_.sum", "numpy.uint8.allreduce.sum",
    "numpy.float32.broadcast_.root1", "numpy.float64.broadcast.root0", "numpy.int32.allgather",
    "torch.float32.allreduce_.avg", "torch.float64.allreduce_.sum", "torch.int32.allreduce_.max",
    "torch.float16.allreduce_.sum", "torch.bfloat16.allreduce_.sum", "torch.bfloat16.allreduce_.avg",
    "torch.bfloat16.broadcast_.root1", "torch.float16.allgather", "torch.bfloat16.allgather",
    "torch.int64.allreduce.min.input_unchanged", "numpy.float32.allreduce_.1M",
    "torch.float32.allreduce_.avg.1M", "barrier"])
def test_case_passed_on_both_ranks(result, case):
    _, lines = result
    for rank in (0, 1):
        assert f"PASS {case}" in lines[rank], f"{case} did not pass on rank {rank}"


def test_every_case_passed(result):
    _, lines = result
    # 13 dtypes; floats (7) x 4 ops, integers (6) x 3 ops, 3 lines per op; 5 broadcast/allgather
    # lines per dtype; 1M-element sum and avg, barrier, done.
    expected = (7 * 4 + 6 * 3) * 3 + 13 * 5 + 4
    for rank in (0, 1):
        print(f"rank {rank}: {len(lines[rank])} cases passed, {expected} expected")
        assert len(set(lines[rank])) == len(lines[rank]) == expected
