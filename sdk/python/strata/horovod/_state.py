"""strata.horovod's process state: the runtime it runs on, the engine thread, the timeline, and
this rank's place (rank, local and cross ranks).

hvd.init() uses the process's strata runtime (strata.init's, or one it creates from
$STRATA_MANIFEST / the default manifest). hvd.shutdown() ends the engine; the runtime itself
stays until the interpreter exits, because the comm transport cannot start twice in one process,
so a later hvd.init() runs on it again, as a Horovod script that re-initialises expects.
"""
import atexit

import torch

import strata

from . import _engine
from ._timeline import Timeline

_COLLECTIVES_ONLY = {"train_batch_size": None, "train_micro_batch_size_per_gpu": 1,
                     "gradient_accumulation_steps": None}
_engine_now = None
_cross = None
_timeline = None


def init(comm=None, process_sets=None):
    global _engine_now, _cross
    if comm is not None:
        raise NotImplementedError("strata.horovod.init: comm= (an MPI communicator) is not taken; "
                                  "Strata's ranks are the job's ranks (strata-run, mpirun, srun)")
    if _engine_now is not None:
        return
    # A runtime made here serves collectives only: the manifest's batch sizes (for a training
    # host) are replaced by one that fits any world size.
    rt = strata.runtime() if strata.is_initialized() else strata.init(None, _COLLECTIVES_ONLY)
    _engine_now = _engine.Engine(rt, _timeline)
    # Registered after the runtime's own close, so it runs before it at exit: the engine's thread
    # must be out of the runtime before strata_destroy.
    atexit.register(shutdown)
    # Cross ranks as Horovod defines them: the ranks with this rank's local rank, one per node.
    from ._collective_ops import Allgather
    local = torch.tensor([rt.world.local_rank], dtype=torch.int64)
    everyone = _engine_now.submit(Allgather([local], None, False)).wait()
    peers = [r for r in range(rt.world.size) if int(everyone[r]) == rt.world.local_rank]
    _cross = (peers.index(rt.world.rank), len(peers))
    if process_sets:
        from ._process_sets import add_process_set
        add_process_set(list(process_sets))


def shutdown():
    global _engine_now
    if _engine_now is not None:
        stop_timeline()
        _engine_now.stop()
        for group in _engine_now.groups.values():
            group.close()
        from ._process_sets import forget_all
        forget_all()
        _engine_now = None


def shutdown_if_on(runtime):
    """Runtime.close's first step: the engine's thread leaves the runtime before strata_destroy."""
    if _engine_now is not None and _engine_now.rt is runtime:
        shutdown()


def is_initialized():
    return _engine_now is not None


def engine():
    if _engine_now is None:
        raise ValueError("Horovod has not been initialized; use hvd.init().")
    return _engine_now


def rank():
    return engine().rank


def size():
    return engine().size


def local_rank():
    return engine().rt.world.local_rank


def local_size():
    return engine().rt.world.local_size


def cross_rank():
    engine()
    return _cross[0]


def cross_size():
    engine()
    return _cross[1]


def start_timeline(file_path, mark_cycles=False):
    global _timeline
    e = engine()
    stop_timeline()
    _timeline = Timeline(file_path, mark_cycles) if e.rank == 0 else None
    e.timeline = _timeline


def stop_timeline():
    global _timeline
    e = engine()
    e.timeline = None
    if _timeline is not None:
        _timeline.close()
        _timeline = None
