"""deepspeed.zero.Init: a model constructed inside it is partitioned as it is built, so that no
rank ever holds the whole model (only one module's own parameters, between its constructor's end
and their partitioning, as under DeepSpeed).

How: inside the context every nn.Module class's __init__ is wrapped (the classes that exist and
those defined inside it). When a module's outermost __init__ returns, each of its own parameters is
cut into world-size slices; this rank keeps its slice, and the parameter is replaced, in the module,
by one of the same shape on the meta device (tied ones stay tied). deepspeed.initialize then
registers them without data (strata.torch's deferred path) and, one parameter group at a time,
allgathers the slices into the whole values, which the runtime partitions as its ZeRO stage says.
Buffers and frozen parameters are left as built. Each slice holds the values this rank's
constructor made: with seeds that differ between ranks the assembled parameter mixes the ranks'
draws (each a draw from the same initialization), where DeepSpeed broadcasts rank 0's first.

Initialization code that runs after a module's constructor (a parent's `self.apply(init_fn)`)
meets meta parameters and changes nothing, as it meets DeepSpeed's empty partitions: run it inside
the module's own constructor, or under GatheredParameters after initialize.

The rank and world size come from the runtime if one exists, else from the launcher's environment
(strata-run, mpirun, srun, torchrun); initialize checks that the runtime's world is the same.
"""
import math
import os
import threading
import warnings

import torch

from .._torch_records import _trim_heap

_registry = {}   # id(meta parameter) -> (this rank's slice, numel, world size)
_replaced = {}   # id(original parameter) -> (original, its meta replacement)
_lock = threading.Lock()
_active = 0


def _world():
    import strata
    if strata.is_initialized():
        world = strata.runtime().world
        return world.rank, world.size
    for rank_key, size_key in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                               ("RANK", "WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"),
                               ("SLURM_PROCID", "SLURM_NTASKS")):
        if rank_key in os.environ and size_key in os.environ:
            return int(os.environ[rank_key]), int(os.environ[size_key])
    return 0, 1


def partition_parameters(module, rank, size):
    """Replaces `module`'s own (not its children's) CPU parameters by meta ones, keeping this
    rank's slice of each."""
    freed = 0
    for name, p in list(module._parameters.items()):
        if p is None or p.is_meta or not p.requires_grad:
            continue  # frozen ones stay whole (the runtime registers trainable ones only)
        seen = _replaced.get(id(p))
        if seen is not None and seen[0] is p:  # tied: already partitioned through another module
            module._parameters[name] = seen[1]
            continue
        numel = p.numel()
        per = max(1, math.ceil(numel / size))
        flat = p.detach().reshape(-1)
        piece = torch.zeros(per, dtype=p.dtype)
        mine = flat[rank * per:(rank + 1) * per]
        piece[:mine.numel()] = mine
        meta = torch.nn.Parameter(torch.empty(p.shape, dtype=p.dtype, device="meta"),
                                  requires_grad=p.requires_grad)
        _registry[id(meta)] = (piece, numel, size)
        _replaced[id(p)] = (p, meta)
        p.data = torch.empty(0, dtype=p.dtype)  # the whole values go now
        module._parameters[name] = meta
        freed += numel * p.element_size()
    if freed >= 1 << 20:
        _trim_heap()  # back to the system: glibc would keep large freed blocks


def slices_by_name(model):
    """{parameter name: (slice, numel, world size)} for the model's parameters built under Init."""
    # Popped: strata.torch replaces the meta parameters by stand-ins, after which their ids
    # could be reused by other objects.
    return {name: _registry.pop(id(p)) for name, p in model.named_parameters()
            if id(p) in _registry}


def whole_value_writer(slices):
    """strata.torch's init(name, parameter) callable: the parameter's whole value from every rank's
    slice (one allgather over the process's runtime; collective, in the same order on every
    rank)."""
    def write(name, p):
        import strata
        runtime = strata.runtime()
        entry = slices.pop(name, None)  # each slice goes once its parameter is written
        if entry is None:
            raise ValueError("strata.deepspeed: parameter %r is on the meta device but was not "
                             "built under deepspeed.zero.Init, so it has no values; build it "
                             "inside Init or on the CPU" % name)
        piece, numel, size = entry
        if size != runtime.world.size:
            raise ValueError("strata.deepspeed: deepspeed.zero.Init partitioned parameter %r over "
                             "%d rank(s), but the runtime has %d" % (name, size,
                                                                     runtime.world.size))
        every = runtime.allgather(piece.view(1, -1))
        p.copy_(every.reshape(-1)[:numel].view(p.shape))
    return write


def forget():
    """After initialize took the slices: the originals' records are no longer needed."""
    _replaced.clear()


def _wrap_init(cls, rank, size, wrapped):
    original = cls.__dict__.get("__init__")
    if original is None or getattr(original, "_strata_zero_init", False):
        return

    def __init__(self, *args, **kwargs):
        depth = self.__dict__.get("_strata_init_depth", 0)
        object.__setattr__(self, "_strata_init_depth", depth + 1)
        try:
            original(self, *args, **kwargs)
        finally:
            object.__setattr__(self, "_strata_init_depth", depth)
        if depth == 0:
            object.__delattr__(self, "_strata_init_depth")
            partition_parameters(self, rank, size)

    __init__._strata_zero_init = True
    __init__.__wrapped__ = original
    cls.__init__ = __init__
    wrapped.append((cls, original))


def _subclasses(root):
    seen, todo = [], [root]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.append(sub)
                todo.append(sub)
    return seen


class Init:
    """deepspeed.zero.Init(module=None, ..., enabled=True): a context; modules built inside it are
    partitioned as they are built. With `module`, that existing module is partitioned at once."""

    def __init__(self, module=None, data_parallel_group=None, mem_efficient_linear=True,
                 remote_device=None, pin_memory=False, config_dict_or_path=None, config=None,
                 enabled=True, dtype=None, mpu=None, **kwargs):
        cfg = config_dict_or_path if config_dict_or_path is not None else config
        if cfg is not None and enabled:
            # DeepSpeed's rule: the model is partitioned as it is built only for stage 3.
            from ._config import resolve
            zero = resolve(None, cfg, None).get("zero_optimization") or {}
            enabled = isinstance(zero, dict) and zero.get("stage") == 3
        self.enabled = enabled
        self._wrapped = []
        self._subclass_hook = None
        for name, value in (("data_parallel_group", data_parallel_group), ("mpu", mpu)):
            if value is not None:
                raise NotImplementedError("strata.deepspeed.zero.Init: %s: parameters are "
                                          "partitioned over every rank (there are no sub-groups)"
                                          % name)
        if remote_device not in (None, "cpu", "none") and enabled:
            warnings.warn("strata.deepspeed.zero.Init: remote_device=%r: where the partitions live "
                          "is the ds_config's zero_optimization.offload_param" % (remote_device,))
        if dtype is not None and dtype != torch.float32 and enabled:
            warnings.warn("strata.deepspeed.zero.Init: dtype=%s: the module stays fp32 and the "
                          "runtime holds the ds_config's fp16/bf16 values" % dtype)
        if module is not None and enabled:
            rank, size = _world()
            for sub in module.modules():
                partition_parameters(sub, rank, size)

    def __enter__(self):
        global _active
        if not self.enabled:
            return self
        rank, size = _world()
        with _lock:
            _active += 1
            self._nested = _active > 1
            if self._nested:  # the outer context's wrappers serve
                return self
            for cls in _subclasses(torch.nn.Module):
                _wrap_init(cls, rank, size, self._wrapped)
            wrapped = self._wrapped
            previous = torch.nn.Module.__dict__.get("__init_subclass__")

            def __init_subclass__(cls, **kwargs):
                super(torch.nn.Module, cls).__init_subclass__(**kwargs)
                _wrap_init(cls, rank, size, wrapped)

            torch.nn.Module.__init_subclass__ = classmethod(__init_subclass__)
            self._subclass_hook = previous
        return self

    def __exit__(self, *exc):
        global _active
        if not self.enabled:
            return False
        with _lock:
            if self._nested:
                _active -= 1
                return False
            for cls, original in reversed(self._wrapped):
                cls.__init__ = original
            self._wrapped = []
            if self._subclass_hook is None:
                del torch.nn.Module.__init_subclass__
            else:
                torch.nn.Module.__init_subclass__ = self._subclass_hook
            _active -= 1
        return False
