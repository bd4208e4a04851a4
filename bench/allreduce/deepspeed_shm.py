"""DeepSpeed's shared-memory allreduce as a peer of bench/allreduce (vs_deepspeed.sh runs it).

Started by mpirun with a Python that has deepspeed (PEER_PYTHON): deepspeed.comm over its CPU
accelerator with the gloo process group, whose inference_all_reduce runs DeepSpeed's own
shared-memory kernel (csrc/cpu/comm/shm.cpp, built on first use). f32 SUM, sizes --min-bytes to
--max-bytes (x4), the same iteration counts, small-integer data and per-size check as
allreduce_bench.cpp: each size runs once and is compared element by element with the exact sum
(a wrong result exits 2), then timed after a barrier per iteration; a time is the slowest rank's,
a figure the median. Prints one line per size, "deepspeed <bytes> <busbw GB/s>", busbw =
2(n-1)/n * bytes / time; exits 3 when DeepSpeed's shared-memory kernel is not in use (say why).
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
import deepspeed  # noqa: E402
import deepspeed.comm as dist  # noqa: E402
import deepspeed.comm.comm as ds_comm  # noqa: E402  (its cdb: the backend init_distributed made)


def iterations_for(nbytes):
    if nbytes >= 64 << 20:
        return 5
    if nbytes >= 16 << 20:
        return 7
    if nbytes >= 1 << 20:
        return 15
    return 61


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--min-bytes", type=int, default=64 << 10)
    parser.add_argument("--max-bytes", type=int, default=256 << 20)
    a = parser.parse_args()
    deepspeed.init_distributed(dist_backend="gloo", auto_mpi_discovery=False, verbose=False)
    rank, size = dist.get_rank(), dist.get_world_size()
    backend = ds_comm.cdb
    if getattr(backend, "shm_comm_op", None) is None or getattr(backend, "shm_vector_kernel_level", 0) < 1:
        if rank == 0:
            print("deepspeed: its shared-memory allreduce is not in use here (op %s, kernel level %s)"
                  % (getattr(backend, "shm_comm_op", None), getattr(backend, "shm_vector_kernel_level", None)),
                  flush=True)
        sys.exit(3)
    index = torch.arange(a.max_bytes // 4, dtype=torch.int64)
    base = (index % 61).to(torch.float32)
    nbytes = a.min_bytes
    while nbytes <= a.max_bytes:
        count = nbytes // 4
        data = base[:count] + rank
        work = data.clone()
        dist.barrier()
        dist.inference_all_reduce(work)
        want = base[:count] * size + size * (size - 1) // 2
        bad = torch.nonzero(work != want)
        if bad.numel() > 0:
            i = bad[0].item()
            print("WRONG RESULT: deepspeed, %d bytes: element %d is %g, expected %g"
                  % (nbytes, i, work[i].item(), want[i].item()), file=sys.stderr, flush=True)
            sys.exit(2)
        iterations = iterations_for(nbytes)
        times = []
        for i in range(max(1, iterations // 4) + iterations):
            work.copy_(data)  # the sum grows each call; keep it exact and the data alike
            dist.barrier()
            start = time.perf_counter()
            dist.inference_all_reduce(work)
            seconds = time.perf_counter() - start
            if i >= max(1, iterations // 4):
                times.append(seconds)
        slowest = torch.tensor(times, dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        if rank == 0:
            busbw = 2.0 * (size - 1) / size * nbytes / statistics.median(slowest.tolist()) / 1e9
            print("deepspeed %d %.3f" % (nbytes, busbw), flush=True)
        nbytes *= 4
    dist.barrier()
    sys.stdout.flush()
    # Leave without the interpreter's teardown: on this torch/DeepSpeed pair it ends a rank with
    # "terminate called without an active exception" (SIGABRT) after every figure is out.
    os._exit(0)


if __name__ == "__main__":
    main()
