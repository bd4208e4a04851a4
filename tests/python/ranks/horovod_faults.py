"""Rank script for test_horovod.py's fault cases.

  horovod_faults.py stall   each rank submits an operation no other rank does: after
                            STRATA_HOROVOD_STALL_FAIL_SECONDS every rank's fails with a message
                            naming the ranks that did not submit it, and the job goes on
  horovod_faults.py die     rank 1 exits while rank 0 waits in an allreduce: rank 0 ends too
  horovod_faults.py join_after_shutdown
                            the last rank shuts strata.horovod down without joining while the
                            others wait in hvd.join(): their joins fail naming it
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
