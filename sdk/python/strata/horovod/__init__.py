"""Horovod's PyTorch API on the Strata runtime: `import strata.horovod as hvd` in place of
`import horovod.torch as hvd`, and launch with strata-run (or mpirun, or srun) as before.

Collectives run on the process's strata runtime (strata.init's, or one made from $STRATA_MANIFEST or
the default manifest): allreduce (Average, Sum, Min, Max, Product; pre- and postscale), grouped
allreduce, allgather with uneven first dimensions, broadcast, alltoall with splits, reducescatter,
the object helpers, join, barrier, and DistributedOptimizer around the script's torch optimizer.
Before each operation the ranks exchange a small descriptor of it, so ranks that submit different
tensors all raise an error instead of hanging (the ranks must submit operations in the same order).

Process sets (hvd.add_process_set) run on sub-groups of the comm stratum (strata Groups).

Not provided (each raises NotImplementedError naming what to use): Adasum, sparse allreduce, GPU tensors (use strata.torch with an NCCL manifest), elastic
(use strata-run --max-restarts), SyncBatchNorm.
"""
from ._api import (allgather, allgather_async, allreduce, allreduce_, allreduce_async,  # noqa: F401
                   allreduce_async_, alltoall, alltoall_async, barrier, broadcast, broadcast_,
                   broadcast_async, broadcast_async_, grouped_allgather, grouped_allgather_async,
                   grouped_allreduce, grouped_allreduce_, grouped_allreduce_async,
                   grouped_allreduce_async_, grouped_reducescatter, grouped_reducescatter_async,
                   join, poll, reducescatter, reducescatter_async, sparse_allreduce_async,
                   synchronize)
from ._collective_ops import Adasum, Average, Max, Min, Product, Sum  # noqa: F401
from ._compression import Compression  # noqa: F401
from ._functions import (allgather_object, broadcast_object, broadcast_optimizer_state,  # noqa: F401
                         broadcast_parameters)
from ._optimizer import DistributedOptimizer  # noqa: F401
from ._process_sets import (ProcessSet, add_process_set, global_process_set,  # noqa: F401
                            remove_process_set)
from ._state import (cross_rank, cross_size, init, is_initialized, local_rank,  # noqa: F401
                     local_size, rank, shutdown, size, start_timeline, stop_timeline)


class HorovodInternalError(RuntimeError):
    """Horovod's error for a failed collective (elastic training catches it). strata.horovod's
    collectives raise strata.StrataError (also a RuntimeError) with the runtime's message."""


def _comm_library():
    """The comm plugin's library when strata-run's gloo backend swapped it in, else ""."""
    import os
    return os.environ.get("STRATA_COMM_LIBRARY", "")


def mpi_built():
    return True


def mpi_enabled():
    return is_initialized() and "gloo" not in _comm_library() and "nccl" not in _comm_library()


def gloo_built():
    return True


def gloo_enabled():
    return is_initialized() and "gloo" in _comm_library()


def nccl_built():
    return False  # strata.horovod's collectives move host memory


def ddl_built():
    return False


def ccl_built():
    return False


def cuda_built():
    return False


def rocm_built():
    return False


def mpi_threads_supported():
    return False


class SyncBatchNorm:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("strata.horovod.SyncBatchNorm is not provided; use "
                                  "torch.nn.BatchNorm (per-rank statistics)")


class _Elastic:
    def __getattr__(self, name):
        raise NotImplementedError("strata.horovod.elastic.%s: use strata-run --max-restarts and "
                                  "the manifest's checkpoint block (auto_resume) instead" % name)


elastic = _Elastic()
