"""A Python peer's allreduce beside bench/allreduce (run.sh, run_multinode.sh start it).

Started by mpirun with a Python that has torch (and deepspeed for --impl deepspeed-shm): PEER_PYTHON.
  --impl deepspeed-shm  deepspeed.comm over its CPU accelerator with the gloo process group, whose
                        inference_all_reduce runs DeepSpeed's own shared-memory kernel
                        (csrc/cpu/comm/shm.cpp, built on first use); exits 3, saying why, when
                        that kernel is not in use;
  --impl torch-gloo     torch.distributed.all_reduce over the gloo process group (TCP).
f32 SUM, sizes --min-bytes to --max-bytes (x4), the same iteration counts, small-integer data and
per-size check as allreduce_bench.cpp: each size runs once and is compared element by element with
the exact sum (a wrong result exits 2), then timed after a barrier per iteration; a time is the
slowest rank's, a figure the median. Prints one line per size, "<impl> <bytes> <busbw GB/s>",
busbw = 2(n-1)/n * bytes / time. Rank, size and local rank come from Open MPI's OMPI_COMM_WORLD_*;
the rendezvous from MASTER_ADDR and MASTER_PORT.
"""
import argparse
import os
import statistics
import sys
import time

for ours, ompi in (("RANK", "OMPI_COMM_WORLD_RANK"), ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"),
                   ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"),
                   ("LOCAL_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE")):
    if ompi in os.environ:
        os.environ.setdefault(ours, os.environ[ompi])

import torch  # noqa: E402
import torch.distributed as tdist  # noqa: E402


def iterations_for(nbytes):
    if nbytes >= 64 << 20:
        return 5
    if nbytes >= 16 << 20:
        return 7
    if nbytes >= 1 << 20:
        return 15
    return 61


def deepspeed_allreduce():
    """DeepSpeed's shared-memory allreduce (in place), or exit 3 saying why it is not in use."""
    import deepspeed
    import deepspeed.comm as dist
    import deepspeed.comm.comm as ds_comm  # its cdb: the backend init_distributed made
    deepspeed.init_distributed(dist_backend="gloo", auto_mpi_discovery=False, verbose=False)
    backend = ds_comm.cdb
    op = getattr(backend, "shm_comm_op", None)
    level = getattr(backend, "shm_vector_kernel_level", None)
    if op is None or (level or 0) < 1:
        if tdist.get_rank() == 0:
            print("deepspeed: its shared-memory allreduce is not in use here (op %s, kernel level "
                  "%s)" % (op, level), flush=True)
        sys.exit(3)
    return dist.inference_all_reduce


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--impl", choices=["deepspeed-shm", "torch-gloo"], required=True)
    parser.add_argument("--min-bytes", type=int, default=64 << 10)
    parser.add_argument("--max-bytes", type=int, default=256 << 20)
    a = parser.parse_args()
    if a.impl == "deepspeed-shm":
        allreduce = deepspeed_allreduce()
    else:
        tdist.init_process_group("gloo")
        allreduce = tdist.all_reduce
    rank, size = tdist.get_rank(), tdist.get_world_size()
    base = (torch.arange(a.max_bytes // 4, dtype=torch.int64) % 61).to(torch.float32)
    nbytes = a.min_bytes
    while nbytes <= a.max_bytes:
        count = nbytes // 4
        data = base[:count] + rank
        work = data.clone()
        tdist.barrier()
        allreduce(work)
        want = base[:count] * size + size * (size - 1) // 2
        bad = torch.nonzero(work != want)
        if bad.numel() > 0:
            i = bad[0].item()
            print("WRONG RESULT: %s, %d bytes: element %d is %g, expected %g"
                  % (a.impl, nbytes, i, work[i].item(), want[i].item()), file=sys.stderr, flush=True)
            sys.exit(2)
        iterations = iterations_for(nbytes)
        warmup = max(1, iterations // 4)
        times = []
        for i in range(warmup + iterations):
            work.copy_(data)  # in place: keep the data alike (and exact) for every call
            tdist.barrier()
            start = time.perf_counter()
            allreduce(work)
            seconds = time.perf_counter() - start
            if i >= warmup:
                times.append(seconds)
        slowest = torch.tensor(times, dtype=torch.float64)
        tdist.all_reduce(slowest, op=tdist.ReduceOp.MAX)
        if rank == 0:
            busbw = 2.0 * (size - 1) / size * nbytes / statistics.median(slowest.tolist()) / 1e9
            print("%s %d %.4g" % (a.impl, nbytes, busbw), flush=True)  # %g: spinning waiters reach 1e-4 GB/s
        nbytes *= 4
    tdist.barrier()
    sys.stdout.flush()
    # Leave without the interpreter's teardown: with torch 2.3 and DeepSpeed 0.19 it ends a rank
    # with "terminate called without an active exception" (SIGABRT) after every figure is out.
    os._exit(0)


if __name__ == "__main__":
    main()
