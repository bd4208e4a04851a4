"""Rank script for test_horovod.py's process sets (4 ranks): the sets {0, 2} and {1, 3} run
different collectives under the same names at the same time, each result checked against values
every rank can compute; then the runtime's own sub-groups (strata Runtime.group) directly. Writes
"PASS <case>" per case to RESULTS_DIR/rank<r>.txt; the first failure raises (non-zero exit).

  process_sets.py RESULTS_DIR horovod|groups
"""
import os
import sys
import time

import torch

import strata

out_dir, case = sys.argv[1], sys.argv[2]


def mine(r, rows=2):
    return torch.arange(rows * 3, dtype=torch.float32).reshape(rows, 3) + 100 * r


def horovod_case():
    import strata.horovod as hvd
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    assert size == 4, "process_sets.py runs at 4 ranks"
    results = open(os.path.join(out_dir, f"rank{rank}.txt"), "w")

    def passed(name):
        results.write(f"PASS {name}\n")
        results.flush()

    even = hvd.add_process_set([0, 2])
    odd = hvd.add_process_set(hvd.ProcessSet([3, 1]))
    assert even.process_set_id != odd.process_set_id and odd.ranks == [1, 3]
    ps = even if rank % 2 == 0 else odd
    other = odd if ps is even else even
    assert ps.included() and not other.included() and ps.size() == 2
    assert ps.rank() == ps.ranks.index(rank) and other.rank() == -1
    passed("add")

    # Different collectives in the two sets at once, under one name.
    if ps is even:
        got = hvd.allreduce(mine(rank), name="x", op=hvd.Sum, process_set=even)
        assert torch.equal(got, mine(0) + mine(2)), got
    else:
        got = hvd.allgather(mine(rank, rows=rank), name="x", process_set=odd)
        assert torch.equal(got, torch.cat([mine(1, 1), mine(3, 3)])), got
    passed("concurrent")
    got = hvd.broadcast(mine(rank), root_rank=ps.ranks[1], name="b", process_set=ps)  # global
    assert torch.equal(got, mine(ps.ranks[1]))
    got = hvd.allreduce(mine(rank), process_set=ps)  # Average
    assert torch.allclose(got, (mine(ps.ranks[0]) + mine(ps.ranks[1])) / 2)
    a, b = hvd.grouped_allreduce([mine(rank), mine(rank, 1)], op=hvd.Max, process_set=ps)
    assert torch.equal(a, mine(ps.ranks[1])) and torch.equal(b, mine(ps.ranks[1], 1))
    passed("collectives")

    # alltoall with uneven splits inside the set: set rank i sends i + j + 1 rows to set rank j.
    me = ps.rank()
    splits = torch.tensor([me + j + 1 for j in range(2)])
    t = mine(rank, rows=int(splits.sum()))
    got, received = hvd.alltoall(t, splits=splits, process_set=ps)
    want = []
    for i, r in enumerate(ps.ranks):  # set rank i's tensor, and where its rows for me start
        theirs = mine(r, rows=sum(i + j + 1 for j in range(2)))
        start = sum(i + k + 1 for k in range(me))
        want.append(theirs[start:start + i + me + 1])
    assert received.tolist() == [i + me + 1 for i in range(2)], received
    assert torch.equal(got, torch.cat(want)), (got, want)
    passed("alltoall")
    got = hvd.reducescatter(mine(rank, rows=4), op=hvd.Sum, process_set=ps)
    total = mine(ps.ranks[0], 4) + mine(ps.ranks[1], 4)
    assert torch.equal(got, total[2 * me:2 * me + 2])
    hvd.barrier(process_set=ps)
    obj = hvd.broadcast_object({"from": rank}, root_rank=ps.ranks[0], process_set=ps)
    assert obj == {"from": ps.ranks[0]}
    passed("reducescatter")

    try:
        hvd.allreduce(mine(rank), process_set=other)
        raise AssertionError("a collective on a set this rank is not in ran")
    except ValueError as e:
        assert "is not in" in str(e)
    passed("not_a_member")
    # The global set still runs beside them.
    got = hvd.allreduce(torch.tensor([float(rank)]), op=hvd.Sum)
    assert float(got) == 6.0
    assert hvd.remove_process_set(even) and hvd.remove_process_set(odd)
    assert not hvd.remove_process_set(even) and not hvd.remove_process_set(hvd.global_process_set)
    try:
        hvd.allreduce(mine(rank), process_set=ps)
        raise AssertionError("a removed set ran a collective")
    except ValueError as e:
        assert "was not added" in str(e)
    passed("remove")
    pair = hvd.add_process_set([0, 3])
    again = hvd.add_process_set([0, 1, 2])  # ids go on; rank 3 takes part in the split only
    if rank < 3:
        if rank == 1:
            # Rank 3, outside the set, shuts down at once: its shutdown must not fail the set's
            # allreduce while a member has yet to submit it.
            time.sleep(0.5)
        got = hvd.allreduce(torch.tensor([1.0]), op=hvd.Sum, process_set=again)
        assert float(got) == 3.0
    passed("readd")
    if rank == 0:
        # A member that shuts down without submitting the set's operation fails it at once.
        try:
            hvd.allreduce(torch.tensor([1.0]), process_set=pair)
            raise AssertionError("an allreduce whose other member had shut down ran")
        except RuntimeError as e:
            assert "rank(s) 3 shut strata.horovod down without submitting it" in str(e), e
    passed("member_shut_down")
    hvd.shutdown()
    passed("done")
    results.close()


def groups_case():
    rt = strata.init(None, {"train_batch_size": None, "train_micro_batch_size_per_gpu": 1,
                            "gradient_accumulation_steps": None})
    rank, size = rt.world.rank, rt.world.size
    results = open(os.path.join(out_dir, f"rank{rank}.txt"), "w")

    def passed(name):
        results.write(f"PASS {name}\n")
        results.flush()

    # Colors by parity, keys reversing the order inside each group.
    g = rt.group(rank % 2, key=-rank)
    members = sorted((r for r in range(size) if r % 2 == rank % 2), reverse=True)
    assert (g.rank, g.size) == (members.index(rank), len(members)), (g.rank, g.size)
    x = torch.tensor([rank + 1.0, 10.0 * rank])
    assert torch.equal(g.allreduce_(x.clone()), sum(torch.tensor([r + 1.0, 10.0 * r])
                                                    for r in members))
    assert torch.equal(g.allgather(x), torch.cat([torch.tensor([r + 1.0, 10.0 * r])
                                                  for r in members]))
    assert torch.equal(g.broadcast_(x.clone(), root=0), torch.tensor([members[0] + 1.0,
                                                                      10.0 * members[0]]))
    g.barrier()
    passed("group.collectives")
    # alltoallv, uneven: group rank i sends i + j + 1 elements (value 100 i + j) to group rank j.
    me, n = g.rank, g.size
    send = torch.cat([torch.full((me + j + 1,), 100.0 * me + j) for j in range(n)])
    recv = torch.empty(sum(i + me + 1 for i in range(n)))
    g.alltoallv(send, [me + j + 1 for j in range(n)], recv, [i + me + 1 for i in range(n)])
    want = torch.cat([torch.full((i + me + 1,), 100.0 * i + me) for i in range(n)])
    assert torch.equal(recv, want), (recv, want)
    passed("group.alltoallv")
    # Every rank (color 0): alltoallv over the world; one rank in no group.
    world = rt.group(0)
    assert (world.rank, world.size) == (rank, size)
    send = torch.arange(size, dtype=torch.int64) + 10 * rank
    recv = torch.empty(size, dtype=torch.int64)
    world.alltoallv(send, [1] * size, recv, [1] * size)
    assert recv.tolist() == [10 * r + rank for r in range(size)], recv
    lonely = rt.group(-1 if rank == 0 else 0)
    assert (lonely is None) == (rank == 0)
    if lonely is not None:
        assert lonely.size == size - 1
        lonely.barrier()
        lonely.close()
    passed("group.world_and_none")
    try:
        rt.group(-5)
        raise AssertionError("color -5 accepted")
    except strata.StrataError as e:
        assert "color -5" in str(e)
    passed("group.bad_color")
    g.close()
    g.close()  # idempotent
    world.close()
    strata.allreduce(torch.ones(1))  # the world comm still works after the groups are gone
    passed("done")
    results.close()


{"horovod": horovod_case, "groups": groups_case}[case]()
