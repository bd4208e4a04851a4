"""Rank script for test_collectives.py: every collective of the binding on numpy arrays and torch
tensors of each dtype, values checked exactly, in-place calls checked to keep the caller's memory.
Writes "PASS <case>" per case to RESULTS_DIR/rank<r>.txt (a file per rank: mpirun interleaves
the ranks' stdout); the first failure raises, so the rank exits non-zero.

  collectives.py MANIFEST RESULTS_DIR
"""
import os
import sys

import numpy as np
import torch

import strata

rt = strata.init(sys.argv[1])
rank, size = strata.rank(), strata.size()
assert size == 2, f"run on 2 ranks, got {size}"
results = open(os.path.join(sys.argv[2], f"rank{rank}.txt"), "w")


def passed(case):
    results.write(f"PASS {case}\n")
    results.flush()

NUMPY = ["float32", "float64", "int32", "int64", "float16", "uint8"]
TORCH = [torch.float32, torch.float64, torch.int32, torch.int64, torch.float16, torch.bfloat16,
         torch.uint8]


def make(lib, dtype, values):
    if lib == "numpy":
        return np.array(values, dtype=dtype)
    return torch.tensor(values, dtype=dtype)


def as_list(x):
    return (x.float() if hasattr(x, "float") else x.astype(np.float64)).tolist()


def pointer(x):
    return x.data_ptr() if hasattr(x, "data_ptr") else x.ctypes.data


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def check(case, got, want):
    got = as_list(got)
    if got != want:
        raise AssertionError(f"{case}: rank {rank} got {got}, want {want}")
    passed(case)


def cases(lib, dtype):
    name = f"{lib}.{dtype_name(dtype)}"
    # Small integers: exact in every dtype, bfloat16 included. Rank r holds (r+1)*[1..6] as 2x3.
    base = [[1, 2, 3], [4, 5, 6]]
    mine = [[(rank + 1) * v for v in row] for row in base]
    n_ops = [("sum", lambda a, b: a + b), ("max", max), ("min", min)]
    floating = dtype.is_floating_point if lib == "torch" else np.dtype(dtype).kind == "f"
    if floating:
        n_ops.append(("avg", lambda a, b: (a + b) / 2))  # 1.5 * v: exact in binary floats
    for op, f in n_ops:
        want = [[float(f(v, 2 * v)) for v in row] for row in base]
        x = make(lib, dtype, mine)
        before = pointer(x)
        y = strata.allreduce_(x, op=op)
        assert y is x, f"{name} allreduce_({op}) returned another object"
        assert pointer(x) == before, f"{name} allreduce_({op}) moved the data"
        check(f"{name}.allreduce_.{op}", x, want)
        src = make(lib, dtype, mine)
        out = strata.allreduce(src, op=op)
        check(f"{name}.allreduce.{op}", out, want)
        check(f"{name}.allreduce.{op}.input_unchanged", src, [[float(v) for v in r] for r in mine])
    # broadcast_ from each root, in place
    for root in (0, 1):
        x = make(lib, dtype, mine)
        before = pointer(x)
        y = strata.broadcast_(x, root=root)
        assert y is x and pointer(x) == before, f"{name} broadcast_ did not work in place"
        check(f"{name}.broadcast_.root{root}", x,
              [[float((root + 1) * v) for v in row] for row in base])
        out = strata.broadcast(make(lib, dtype, mine), root=root)
        check(f"{name}.broadcast.root{root}", out,
              [[float((root + 1) * v) for v in row] for row in base])
    # allgather: rank order along dim 0
    out = strata.allgather(make(lib, dtype, mine))
    assert tuple(out.shape) == (4, 3), f"{name} allgather shape {tuple(out.shape)}"
    assert type(out) is type(make(lib, dtype, mine)), f"{name} allgather returned {type(out)}"
    check(f"{name}.allgather", out, [[float((r + 1) * v) for v in row] for r in range(2)
                                    for row in base])


for dtype in NUMPY:
    cases("numpy", dtype)
for dtype in TORCH:
    cases("torch", dtype)

# A larger buffer than any internal small-message path: 1M float32, in place, sum.
big = np.full(1 << 20, rank + 1, dtype=np.float32)
p = big.ctypes.data
strata.allreduce_(big)
assert big.ctypes.data == p and np.all(big == 3.0), "1M-element allreduce_"
passed("numpy.float32.allreduce_.1M")
t = torch.full((1 << 20,), float(rank + 1))
p = t.data_ptr()
strata.allreduce_(t, op="avg")
assert t.data_ptr() == p and bool(torch.all(t == 1.5)), "1M-element torch allreduce_ avg"
passed("torch.float32.allreduce_.avg.1M")
strata.barrier()
passed("barrier")
strata.shutdown()
passed("done")
print(f"rank {rank}: done", flush=True)
