"""Strata from Python: the host C API of libstrata over ctypes, and (strata.torch) a PyTorch
DistributedOptimizer. Launch scripts with `strata-run -np N -- python3 script.py` or `mpirun`,
exactly as a C++ host.

    import strata
    strata.init("manifest.json")
    total = strata.allreduce(numpy.ones(4, numpy.float32))   # every rank's, summed

One runtime per process: strata.init creates it (collective) and the module functions below use
it; strata.shutdown() (or interpreter exit) destroys it, and it cannot be created again.
"""
from .runtime import (LoadResult, ParamView, Runtime, StepResult, StepTime, StrataError, Training,
                      World, default_manifest, library)

__all__ = ["init", "shutdown", "runtime", "rank", "size", "local_rank", "local_size", "allreduce",
           "allreduce_", "allgather", "broadcast", "broadcast_", "barrier", "Runtime",
           "StrataError", "StepResult", "World", "Training", "ParamView", "LoadResult",
           "StepTime", "library", "default_manifest"]

_default = None
_shut_down = False


def __getattr__(name):
    """strata.__version__: the project's version. An installed package has it in _version.py (the
    build writes it); a source tree on PYTHONPATH asks the libstrata it loads (strata_version())."""
    if name == "__version__":
        try:
            from ._version import __version__ as version
        except ImportError:
            try:
                version = library()[0].strata_version().decode()
            except OSError as e:  # getattr(strata, "__version__", None) must still work
                raise AttributeError("strata.__version__: %s" % e) from None
        return version
    raise AttributeError("module 'strata' has no attribute %r" % name)


def init(manifest=None, overrides=None):
    """Creates this process's runtime (collective over all ranks) and returns it."""
    global _default
    if _default is not None:
        raise ValueError("strata.init: already initialised in this process (one runtime per "
                         "process); use strata.runtime()")
    if _shut_down:
        raise ValueError("strata.init: this process already shut its runtime down, and the comm "
                         "transport cannot start twice in one process")
    _default = Runtime(manifest, overrides)
    return _default


def runtime():
    """The runtime strata.init created; ValueError before init."""
    if _default is None:
        raise ValueError("strata: not initialised; call strata.init(manifest) first")
    return _default


def is_initialized():
    return _default is not None


def shutdown():
    """Destroys the runtime (collective). Idempotent."""
    global _default, _shut_down
    if _default is not None:
        _default.close()
        _default, _shut_down = None, True


def rank():
    return runtime().world.rank


def size():
    return runtime().world.size


def local_rank():
    return runtime().world.local_rank


def local_size():
    return runtime().world.local_size


def allreduce(x, op="sum"):
    return runtime().allreduce(x, op)


def allreduce_(x, op="sum"):
    return runtime().allreduce_(x, op)


def allgather(x):
    return runtime().allgather(x)


def broadcast(x, root=0):
    return runtime().broadcast(x, root)


def broadcast_(x, root=0):
    return runtime().broadcast_(x, root)


def barrier():
    runtime().barrier()
