"""Rank script for test_horovod.py: every function of strata.horovod at any world size, each result
checked against the same operation done with the runtime directly (strata.allreduce, allgather,
broadcast) or, where the runtime has no such collective (uneven allgather, alltoall,
reducescatter), against values every rank can compute for every other. Writes "PASS <case>" per
case to RESULTS_DIR/rank<r>.txt; the first failure raises, so the rank exits non-zero.

  horovod_api.py RESULTS_DIR
"""
import json
import os
import sys
import warnings

import torch

import strata
import strata.horovod as hvd

hvd.init()
rank, size = hvd.rank(), hvd.size()
results = open(os.path.join(sys.argv[1], f"rank{rank}.txt"), "w")


def passed(case):
    results.write(f"PASS {case}\n")
    results.flush()


def same(case, got, want):
    if isinstance(got, (list, tuple)):
        assert len(got) == len(want), f"{case}: {len(got)} results, want {len(want)}"
        for g, w in zip(got, want):
            same(case, g, w)
        return
    assert got.dtype == want.dtype, f"{case}: dtype {got.dtype}, want {want.dtype}"
    assert got.shape == want.shape, f"{case}: shape {tuple(got.shape)}, want {tuple(want.shape)}"
    assert torch.equal(got, want), f"{case}: rank {rank} got {got}, want {want}"


def raises(case, kinds, fn, words=()):
    try:
        fn()
    except kinds as e:
        for w in words:
            assert w in str(e), f"{case}: message {str(e)!r} lacks {w!r}"
        passed(case)
        return
    raise AssertionError(f"{case}: no {kinds} raised")


def mine(r, rows, dtype=torch.float32):
    """Rank r's tensor: rows x 3, values that differ per rank and row."""
    return (torch.arange(rows * 3, dtype=torch.float64).reshape(rows, 3) + 100 * r).to(dtype)


# ---- the process's place ------------------------------------------------------------------------
assert (hvd.rank(), hvd.size(), hvd.local_rank(), hvd.local_size()) == (
    strata.rank(), strata.size(), strata.local_rank(), strata.local_size())
assert hvd.is_initialized() and hvd.cross_size() * hvd.local_size() == size
assert 0 <= hvd.cross_rank() < hvd.cross_size()
passed("basics")

# ---- allreduce against the runtime's --------------------------------------------------------------
for dtype in (torch.float32, torch.float64, torch.int32, torch.int64, torch.float16,
              torch.bfloat16):
    x = mine(rank, 4, dtype)
    for hop, op in ((hvd.Sum, "sum"), (hvd.Min, "min"), (hvd.Max, "max")):
        same(f"allreduce.{op}", hvd.allreduce(x, op=hop), strata.allreduce(x.clone(), op))
    if dtype.is_floating_point:
        want = strata.allreduce(x.clone(), "sum").to(torch.float32) / size
        got = hvd.allreduce(x, op=hvd.Average).to(torch.float32)
        assert torch.allclose(got, want, rtol=1e-2 if x.element_size() == 2 else 1e-6), dtype
    else:
        same("allreduce.average.int", hvd.allreduce(x, average=True),
             torch.div(strata.allreduce(x.clone(), "sum"), size, rounding_mode="trunc"))
passed("allreduce.ops")
x = torch.tensor([1.0 + rank, 2.0, -1.0])
everyone = strata.allgather(x.reshape(1, 3))
same("allreduce.product", hvd.allreduce(x, op=hvd.Product), torch.prod(everyone, dim=0))
passed("allreduce.product")
for dtype in (torch.int8, torch.int16):  # reduced in int32 by strata.horovod
    x = torch.full((5,), rank + 1, dtype=dtype)
    same("allreduce.narrow_int", hvd.allreduce(x, op=hvd.Sum),
         torch.full((5,), size * (size + 1) // 2, dtype=dtype))
passed("allreduce.narrow_int")
x = mine(rank, 2)
same("allreduce.prescale", hvd.allreduce(x, op=hvd.Sum, prescale_factor=0.5),
     strata.allreduce(x * 0.5, "sum"))
same("allreduce.postscale", hvd.allreduce(x, op=hvd.Sum, postscale_factor=3.0),
     strata.allreduce(x.clone(), "sum") * 3.0)
passed("allreduce.scale")
y = mine(rank, 3)
address = y.data_ptr()
assert hvd.allreduce_(y, op=hvd.Sum) is y and y.data_ptr() == address
same("allreduce_", y, strata.allreduce(mine(rank, 3), "sum"))
# The runtime's own collectives are called only while no strata.horovod operation is in flight.
want_max, want_sum = strata.allreduce(mine(rank, 3), "max"), strata.allreduce(mine(rank, 2), "sum")
h = hvd.allreduce_async(mine(rank, 3), op=hvd.Max, name="async.max")
h2 = hvd.allreduce_async_(mine(rank, 2), op=hvd.Sum)
same("allreduce_async", hvd.synchronize(h), want_max)
same("allreduce_async_", hvd.synchronize(h2), want_sum)
assert hvd.poll(h) is True and hvd.poll(h2) is True, "poll is not True after synchronize"
passed("allreduce.inplace_async")
t = mine(rank, 2).requires_grad_()
hvd.allreduce(t, op=hvd.Sum).sum().backward()
same("allreduce.grad", t.grad, torch.full((2, 3), float(size)))
passed("allreduce.grad")

# ---- grouped allreduce: mixed dtypes, one fused reduction per dtype ------------------------------
group = [mine(rank, 2), mine(rank, 3, torch.int64), mine(rank, 1, torch.float64)]
want = [strata.allreduce(t.clone(), "sum") for t in group]
same("grouped_allreduce", hvd.grouped_allreduce(group, op=hvd.Sum), want)
copies = [t.clone() for t in group]
hvd.grouped_allreduce_(copies, op=hvd.Sum)
same("grouped_allreduce_", copies, want)
same("grouped_allreduce_async", hvd.synchronize(hvd.grouped_allreduce_async(group, op=hvd.Sum)),
     want)
passed("grouped_allreduce")

# ---- allgather: even against the runtime's, uneven against every rank's known rows ---------------
x = mine(rank, 2)
same("allgather.even", hvd.allgather(x), strata.allgather(x))
uneven = hvd.allgather(mine(rank, rank + 1, torch.int32))
same("allgather.uneven", uneven, torch.cat([mine(r, r + 1, torch.int32) for r in range(size)]))
h = hvd.allgather_async(mine(rank, rank % 2, torch.bool))  # 0 rows on even ranks
same("allgather.bool", hvd.synchronize(h), torch.cat([mine(r, r % 2, torch.bool)
                                                      for r in range(size)]))
same("grouped_allgather", hvd.grouped_allgather([mine(rank, rank + 1), mine(rank, 1, torch.int8)]),
     [torch.cat([mine(r, r + 1) for r in range(size)]),
      torch.cat([mine(r, 1, torch.int8) for r in range(size)])])
t = mine(rank, rank + 1).requires_grad_()
hvd.allgather(t).sum().backward()
same("allgather.grad", t.grad, torch.ones(rank + 1, 3))  # average of ones over ranks
objs = hvd.allgather_object({"rank": rank, "tag": "x" * rank})
assert objs == [{"rank": r, "tag": "x" * r} for r in range(size)], objs
passed("allgather")

# ---- broadcast ------------------------------------------------------------------------------------
root = size - 1
x = mine(rank, 3)
same("broadcast", hvd.broadcast(x, root), strata.broadcast(mine(rank, 3), root))
same("broadcast.input_unchanged", x, mine(rank, 3))
y = mine(rank, 2, torch.int16)
assert hvd.broadcast_(y, 0) is y
same("broadcast_", y, mine(0, 2, torch.int16))
same("broadcast_async", hvd.synchronize(hvd.broadcast_async(mine(rank, 1), root)), mine(root, 1))
assert hvd.broadcast_object({"from": rank} if rank == root else None, root) == {"from": root}
model = torch.nn.Linear(3, 2)
torch.nn.init.constant_(model.weight, float(rank))
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
same("broadcast_parameters", model.weight.data, torch.zeros(2, 3))
opt = torch.optim.Adam(model.parameters(), lr=0.1 * (rank + 1))
model(torch.ones(1, 3)).sum().backward()
opt.step()
hvd.broadcast_optimizer_state(opt, root_rank=0)
assert opt.param_groups[0]["lr"] == 0.1, opt.param_groups[0]["lr"]
root_state = hvd.broadcast_object(opt.state_dict()["state"], 0)
for k, v in opt.state_dict()["state"].items():
    for name, value in v.items():
        if torch.is_tensor(value):
            same("broadcast_optimizer_state", value, root_state[k][name])
passed("broadcast")

# ---- alltoall with uneven splits ------------------------------------------------------------------
def rows_for(src, dst):
    return (src + 2 * dst) % 3  # 0, 1 or 2 rows: some empty


sent = torch.cat([mine(rank, rows_for(rank, j)) + 10 * j for j in range(size)])
splits = torch.tensor([rows_for(rank, j) for j in range(size)], dtype=torch.int32)
out, received = hvd.alltoall(sent, splits=splits)
same("alltoall.uneven", out, torch.cat([mine(j, rows_for(j, rank)) + 10 * rank for j in range(size)]))
same("alltoall.received_splits", received,
     torch.tensor([rows_for(j, rank) for j in range(size)], dtype=torch.int32))
equal = torch.arange(2 * size, dtype=torch.int64) + 100 * rank
same("alltoall.equal", hvd.alltoall(equal),
     torch.cat([torch.arange(2 * rank, 2 * rank + 2, dtype=torch.int64) + 100 * j
                for j in range(size)]))
passed("alltoall")

# ---- reducescatter: the runtime's allreduce, this rank's rows -------------------------------------
rows = 2 * size + 1  # uneven: the first rank gets one more row
x = mine(rank, rows)
total = strata.allreduce(x.clone(), "sum")
first = [r * 2 + min(r, 1) for r in range(size)]
count = 3 if rank == 0 else 2
same("reducescatter.sum", hvd.reducescatter(x, op=hvd.Sum), total[first[rank]:first[rank] + count])
got = hvd.reducescatter(x, op=hvd.Average)
assert torch.allclose(got, total[first[rank]:first[rank] + count] / size)
same("grouped_reducescatter", hvd.grouped_reducescatter([x, x.double()], op=hvd.Sum),
     [total[first[rank]:first[rank] + count], total.double()[first[rank]:first[rank] + count]])
passed("reducescatter")

# ---- operations submitted in different orders are matched by name ---------------------------------
a, b = mine(rank, 1), mine(rank, 2)
want_a, want_b = strata.allreduce(a.clone(), "sum"), strata.allreduce(b.clone(), "sum")
if rank % 2:
    hb, ha = hvd.allreduce_async(b, name="b", op=hvd.Sum), hvd.allreduce_async(a, name="a", op=hvd.Sum)
else:
    ha, hb = hvd.allreduce_async(a, name="a", op=hvd.Sum), hvd.allreduce_async(b, name="b", op=hvd.Sum)
same("order.a", hvd.synchronize(ha), want_a)
same("order.b", hvd.synchronize(hb), want_b)
passed("order_by_name")

# ---- ranks that submit different tensors all get an error, and go on ------------------------------
if size > 1:
    raises("mismatch.shape", RuntimeError, lambda: hvd.allreduce(torch.ones(3 + rank)),
           ["ranks disagree on the tensor's shape", "rank 0 [3]", "rank 1 [4]"])
    raises("mismatch.dtype", RuntimeError,
           lambda: hvd.allreduce(torch.ones(3, dtype=torch.float32 if rank else torch.float64)),
           ["ranks disagree on the dtype"])
    raises("mismatch.root", RuntimeError, lambda: hvd.broadcast(torch.ones(2), rank),
           ["ranks disagree on the root rank"])
    raises("mismatch.op", RuntimeError,
           lambda: hvd.allreduce(torch.ones(2), op=hvd.Sum if rank else hvd.Max),
           ["ranks disagree on the reduction"])
    # A tensor only one rank cannot send: it raises its own error, the others name it, and the
    # unnamed operations after it still pair up.
    odd = torch.ones(3, dtype=torch.complex64 if rank == 0 else torch.float32)
    raises("mismatch.local_refusal", (TypeError, RuntimeError), lambda: hvd.allreduce(odd),
           ["complex64"] if rank == 0 else ["rank 0 refused its own allreduce"])
    same("after_local_refusal", hvd.allreduce(torch.ones(2), op=hvd.Sum),
         torch.full((2,), float(size)))
    raises("alltoall.bad_splits", (ValueError, RuntimeError),
           lambda: hvd.alltoall(torch.ones(size), splits=[size + 1] + [0] * (size - 1)
                                if rank == 0 else [1] * size))
same("after_errors", hvd.allreduce(torch.ones(2), op=hvd.Sum), torch.full((2,), float(size)))
passed("mismatch")

# ---- what Strata does not provide says so, and what to use --------------------------------------
raises("bad.process_set_ranks", ValueError,
       lambda: hvd.add_process_set([0, size]), ["expected ranks in 0-%d" % (size - 1)])
raises("bad.process_set_not_added", ValueError,
       lambda: hvd.allreduce(torch.ones(1), process_set=hvd.ProcessSet([0])), ["was not added"])
raises("unsupported.adasum", NotImplementedError,
       lambda: hvd.allreduce(torch.ones(2), op=hvd.Adasum), ["Adasum", "hvd.Average"])
raises("unsupported.elastic", NotImplementedError, lambda: hvd.elastic.run, ["--max-restarts"])
raises("bad.not_a_tensor", TypeError, lambda: hvd.allreduce_async([1, 2]), ["torch.Tensor"])
raises("bad.op", ValueError, lambda: hvd.allreduce(torch.ones(1), op=42), ["op 42"])
if size > 1:  # rank 0's "dup" cannot finish before the others submit theirs, after the barrier
    if rank == 0:
        dup = hvd.allreduce_async(torch.ones(1), name="dup", op=hvd.Sum)
        raises("bad.duplicate_name", ValueError,
               lambda: hvd.allreduce_async(torch.ones(1), name="dup"), ["already in flight"])
        hvd.barrier()
    else:
        hvd.barrier()
        dup = hvd.allreduce_async(torch.ones(1), name="dup", op=hvd.Sum)
    same("duplicate_name.result", hvd.synchronize(dup), torch.full((1,), float(size)))
passed("unsupported")

# ---- DistributedOptimizer: the gradients the torch optimizer sees are the runtime's average ------
def make_net():  # a new one per optimizer: an optimizer's hooks stay on its parameters
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)
    return net


for passes, compression, op in ((1, hvd.Compression.none, hvd.Average),
                                (2, hvd.Compression.none, hvd.Sum),
                                (1, hvd.Compression.fp16, hvd.Average)):
    net = make_net()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.0),
                                   named_parameters=net.named_parameters(), op=op,
                                   compression=compression, backward_passes_per_step=passes)
    opt.zero_grad()
    for p in range(passes):
        net(torch.full((2, 4), float(rank + p))).sum().backward()
    local = [q.grad.clone() for q in net.parameters()]
    opt.synchronize()
    for q, g in zip(net.parameters(), local):
        sent = g.half() if compression is hvd.Compression.fp16 else g
        want = strata.allreduce(sent.clone(), "sum")
        if op == hvd.Average:  # divided in float32, rounded to the wire's dtype, then widened
            want = (want.float() / size).to(want.dtype)
        want = want.to(g.dtype)
        same(f"optimizer.{passes}.{compression.__name__}", q.grad, want)
    with opt.skip_synchronize():
        opt.step()
    opt.zero_grad()
    passed(f"optimizer.passes{passes}.{compression.__name__}.op{op}")
net = make_net()
opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.0),
                               named_parameters=net.named_parameters())
net(torch.ones(1, 4)).sum().backward()
raises("optimizer.zero_grad_before_step", AssertionError, opt.zero_grad, ["before optimizer.step"])
opt.synchronize()
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    opt.step()
assert any("skip_synchronize" in str(w.message) for w in caught), caught
raises("optimizer.duplicate_names", ValueError,
       lambda: hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                        named_parameters=[("w", p) for p in net.parameters()]),
       ["duplicates: w"])
passed("optimizer")

# ---- join: the last rank joins first; the others' allreduces run with its zeros --------------------------------
last = size - 1
pre = hvd.allreduce_async(torch.full((2,), float(rank + 1)), name="before_join", op=hvd.Sum)
if rank == last:  # its join follows an operation still pending: that one runs with its data
    got = hvd.join()
    same("join.pending_before", hvd.synchronize(pre),
         torch.full((2,), float(size * (size + 1) // 2)))
else:
    same("join.pending_before", hvd.synchronize(pre),
         torch.full((2,), float(size * (size + 1) // 2)))
    x = torch.full((3,), float(rank + 1))
    for _ in range(2):
        same("join.allreduce", hvd.allreduce(x, op=hvd.Sum),
             torch.full((3,), float(sum(r + 1 for r in range(size - 1)))))
    got = hvd.join()
# The same on every rank, and not the rank that joined first (it joined before the others did).
everyone = hvd.allgather_object(got)
assert everyone == [got] * size and (size == 1 or got != last), everyone
passed("join")

# ---- timeline --------------------------------------------------------------------------------------
path = os.path.join(sys.argv[1], "timeline.json")
hvd.start_timeline(path, mark_cycles=True)
hvd.allreduce(torch.ones(3), name="timed")
hvd.stop_timeline()
if rank == 0:
    events = json.load(open(path))
    names = {e["name"] for e in events}
    assert {"NEGOTIATE_ALLREDUCE", "ALLREDUCE", "CYCLE_START"} <= names, names
    assert any(e.get("args", {}).get("name") == "allreduce.timed" for e in events), events
passed("timeline")

hvd.shutdown()
hvd.init()  # again, on the same runtime
same("reinit", hvd.allreduce(torch.ones(1), op=hvd.Sum), torch.full((1,), float(size)))
hvd.shutdown()
passed("done")
