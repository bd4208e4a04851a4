"""Rank script for test_horovod.py's fault cases.

  horovod_faults.py stall   each rank submits an operation no other rank does: after
                            STRATA_HOROVOD_STALL_FAIL_SECONDS every rank's fails with a message
                            naming the ranks that did not submit it, and the job goes on
  horovod_faults.py die     rank 1 exits while rank 0 waits in an allreduce: rank 0 ends too
  horovod_faults.py join_after_shutdown
                            the last rank shuts strata.horovod down without joining while the
                            others wait in hvd.join(): their joins fail naming it
  horovod_faults.py join_after_shutdown_with_pending
                            rank 2 submits an allreduce, shuts down with it pending; rank 1
                            submits it a second later while rank 0 waits in hvd.join(): the
                            allreduce still runs (rank 0 adds zeros), then rank 0's join fails
                            (a process set makes every rank cycle while rank 1 sleeps)
"""
import os
import sys
import time

import torch

import strata.horovod as hvd

hvd.init()
rank = hvd.rank()
if sys.argv[1] == "stall":
    try:
        hvd.allreduce(torch.ones(3), name=f"only_on_{rank}")
        raise AssertionError("an allreduce only this rank submitted returned")
    except RuntimeError as e:
        print(f"rank {rank} stall error: {e}", flush=True)
    total = hvd.allreduce(torch.ones(1), op=hvd.Sum).item()
    print(f"rank {rank} after the stall: {total}", flush=True)
elif sys.argv[1] == "die":
    if rank == 1:
        time.sleep(1)
        os._exit(3)
    hvd.allreduce(torch.ones(3), name="never_answered")
    print("rank 0: the allreduce returned without rank 1", flush=True)
elif sys.argv[1] == "join_after_shutdown":
    last = hvd.size() - 1
    if rank == last:
        hvd.shutdown()
        print(f"rank {rank} shut down", flush=True)
    else:
        try:
            hvd.join()
            raise AssertionError("hvd.join() returned although a rank shut down without joining")
        except RuntimeError as e:
            print(f"rank {rank} join error: {e}", flush=True)
        hvd.shutdown()
elif sys.argv[1] == "join_after_shutdown_with_pending":
    # With a process set every rank cycles even when idle, so ranks 0 and 2 see rank 1's second
    # of sleep cycle by cycle, rank 2 shut down with its allreduce still pending.
    hvd.add_process_set([0, 1])
    if rank == 0:
        try:
            hvd.join()
            raise AssertionError("hvd.join() returned although ranks shut down without joining")
        except RuntimeError as e:
            print(f"rank 0 join error: {e}", flush=True)
    else:
        if rank == 1:
            time.sleep(1)
        handle = hvd.allreduce_async(torch.tensor([float(rank + 1)]), op=hvd.Sum, name="late")
        if rank == 2:
            hvd.shutdown()
        print(f"rank {rank} late: {hvd.synchronize(handle).item()}", flush=True)
    hvd.shutdown()
