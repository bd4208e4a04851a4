"""strata.horovod (`import strata.horovod as hvd`): every function against the runtime's own
collectives at 1, 2 and 4 ranks over MPI and 3 over Gloo (strata-run), process sets on the comm
stratum's sub-groups at 4 ranks over both, the checks in
ranks/horovod_api.py; ranks that submit different operations end with an error, not a hang; a rank
that dies ends the others. The Horovod-style training script (train.py --mode horovod) is compared
with strata.torch and DDP in test_torch_equivalence.py."""
import os
import re

import pytest

from conftest import PYTHON, RANKS_DIR, required_env, run, run_python_ranks

API = os.path.join(RANKS_DIR, "horovod_api.py")
FAULTS = os.path.join(RANKS_DIR, "horovod_faults.py")
CASES = ["basics", "allreduce.ops", "allreduce.product", "allreduce.narrow_int", "allreduce.scale",
         "allreduce.inplace_async", "allreduce.grad", "grouped_allreduce", "allgather", "broadcast",
         "alltoall", "reducescatter", "order_by_name", "mismatch", "unsupported", "optimizer",
         "join", "timeline", "done"]


def results_dir(work_dir, label):
    path = os.path.join(work_dir, "horovod", label)
    os.makedirs(path, exist_ok=True)
    for name in os.listdir(path):
        os.remove(os.path.join(path, name))
    return path


@pytest.mark.parametrize("backend, ranks", [("mpi", 1), ("mpi", 2), ("mpi", 4), ("gloo", 3)])
def test_every_function_matches_the_runtime(work_dir, backend, ranks):
    out = results_dir(work_dir, f"{backend}{ranks}")
    if backend == "mpi":
        r = run_python_ranks(ranks, API, [out], timeout=180)
    else:
        launcher = required_env("STRATA_TEST_STRATA_RUN")
        r = run([launcher, "--backend", "gloo", "-np", str(ranks), "--", PYTHON, API, out],
                timeout=180)
        assert "comm=allreduce-gloo" in r.output, "the gloo comm plugin did not run"
    assert r.returncode == 0, str(r)
    for rank in range(ranks):
        lines = open(os.path.join(out, f"rank{rank}.txt")).read().splitlines()
        for case in CASES:
            assert f"PASS {case}" in lines, f"{case} did not pass on rank {rank} of {ranks}"
        if ranks > 1:
            for case in ("mismatch.shape", "mismatch.dtype", "mismatch.root", "mismatch.op",
                         "mismatch.local_refusal", "alltoall.bad_splits"):
                assert f"PASS {case}" in lines, f"{case} did not pass on rank {rank}"


PROCESS_SETS = os.path.join(RANKS_DIR, "process_sets.py")


@pytest.mark.parametrize("backend", ["mpi", "gloo"])
@pytest.mark.parametrize("case, checks", [
    ("horovod", ["add", "concurrent", "collectives", "alltoall", "reducescatter", "not_a_member",
                 "remove", "readd", "member_shut_down", "done"]),
    ("groups", ["group.collectives", "group.alltoallv", "group.world_and_none", "group.bad_color",
                "done"])])
def test_process_sets_run_on_sub_groups(work_dir, backend, case, checks):
    """{0, 2} and {1, 3} run different collectives under one name at once (hvd.add_process_set),
    alltoall with uneven splits inside a set; and the runtime's sub-groups directly (split by
    parity with reversed keys, alltoallv, a rank in no group), at 4 ranks."""
    out = results_dir(work_dir, f"sets_{case}_{backend}")
    if backend == "mpi":
        r = run_python_ranks(4, PROCESS_SETS, [out, case], timeout=180)
    else:
        launcher = required_env("STRATA_TEST_STRATA_RUN")
        r = run([launcher, "--backend", "gloo", "-np", "4", "--", PYTHON, PROCESS_SETS, out, case],
                timeout=180)
        assert "comm=allreduce-gloo" in r.output, "the gloo comm plugin did not run"
    assert r.returncode == 0, str(r)
    for rank in range(4):
        lines = open(os.path.join(out, f"rank{rank}.txt")).read().splitlines()
        for check in checks:
            assert f"PASS {check}" in lines, f"{check} did not pass on rank {rank}"


def test_operations_only_some_ranks_submit_fail_on_every_rank(work_dir):
    r = run_python_ranks(2, FAULTS, ["stall"], timeout=60,
                         env={"STRATA_HOROVOD_STALL_SECONDS": "1",
                              "STRATA_HOROVOD_STALL_FAIL_SECONDS": "3"})
    assert r.returncode == 0, str(r)
    for rank, other in ((0, 1), (1, 0)):
        assert f"waiting 1 s for rank(s) {other} to submit allreduce.only_on_{rank}" in r.output
        assert (f"rank {rank} stall error: strata.horovod.allreduce (allreduce.only_on_{rank}): "
                f"rank(s) {other} did not submit it in 3 s") in r.output
        assert f"rank {rank} after the stall: 2.0" in r.output


def test_a_join_fails_when_a_rank_shuts_down_without_joining(work_dir):
    r = run_python_ranks(3, FAULTS, ["join_after_shutdown"], timeout=60)
    assert not r.timed_out and r.returncode == 0, str(r)
    for rank in (0, 1):
        assert (f"rank {rank} join error: strata.horovod.join: rank(s) 2 shut strata.horovod down "
                f"without joining") in r.output, str(r)
    assert "rank 2 shut down" in r.output


def test_a_join_waits_for_what_a_shut_down_rank_still_has_pending(work_dir):
    r = run_python_ranks(3, FAULTS, ["join_after_shutdown_with_pending"], timeout=60)
    assert not r.timed_out and r.returncode == 0, str(r)
    for rank in (1, 2):
        assert f"rank {rank} late: 5.0" in r.output, str(r)
    assert re.search(r"rank 0 join error: strata.horovod.join: rank\(s\) (1, )?2 shut "
                     r"strata.horovod down without joining", r.output), str(r)


def test_a_rank_that_dies_ends_the_others(work_dir):
    r = run_python_ranks(2, FAULTS, ["die"], timeout=60)
    assert not r.timed_out and r.returncode != 0, str(r)
    assert "rank 1 is gone" in r.output
    assert "returned without rank 1" not in r.output
