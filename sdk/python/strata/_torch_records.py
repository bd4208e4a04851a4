"""What strata.torch keeps per registered parameter and per parameter group."""
import ctypes

import torch

from . import _capi
from ._partitioned import tensor_at
from .runtime import StrataError

_TORCH_DTYPE = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
_TORCH_CODE = {torch.float32: _capi.F32, torch.float16: _capi.F16, torch.bfloat16: _capi.BF16}


class _Param:
    """One registered parameter and how its values and gradients reach the runtime."""
    __slots__ = ("name", "p", "index", "group", "bridge", "store", "store_grad", "resident",
                 "partitioned", "live", "placeholder", "shape", "arrived", "copied_version",
                 "deferred", "_views")

    def __init__(self, name, p):
        self.name, self.p = name, p
        self.index = self.group = None
        self.bridge = False      # fp32 module parameter, f16/bf16 runtime values
        self.store = None        # what was registered as data: p.data itself, or its f16/bf16 copy
        self.store_grad = None   # flat mode: the registered gradient buffer
        self.resident = False    # the runtime's values live in p.data itself (nothing to copy)
        self.partitioned = False  # stage 3: whole only while its group is gathered
        self.live = None         # partitioned: the whole tensor in p.data while gathered
        self.placeholder = None  # partitioned: p.data between uses
        self.shape = p.shape
        self.arrived = False     # this micro-batch's gradient was handed over
        self.copied_version = -1
        self.deferred = False    # built on the meta device: registered without data, written after
        self._views = {}         # (address, dtype) -> tensor over runtime memory

    def view_tensor(self, address, dtype):
        key = (address, dtype)
        t = self._views.get(key)
        if t is None:
            if len(self._views) >= 4:  # buffers that move (lent gradients) would pile up
                self._views.clear()
            t = tensor_at(address, _numel(self.shape), dtype, self.shape)
            self._views[key] = t
        return t

    def used_outside(self, what):
        return StrataError(
            _capi.ERR_INVALID_ARGUMENT,
            "strata.torch: parameter %r is partitioned by ZeRO stage 3 and whole only during the "
            "forward and backward of the module that owns it, but %s was called on it outside them (a "
            "parameter read by another module's forward, or outside any forward). Read whole "
            "values inside `with opt.gathered():` or with opt.module_state_dict(), or use the "
            "parameter only in its own module" % (self.name, what))


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _libc_malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_MALLOC_TRIM = _libc_malloc_trim()  # looked up once: _trim_heap runs after every stage-3 step


def _trim_heap():
    """Returns freed heap memory to the system (glibc keeps large freed blocks otherwise), so
    that the process's RSS shows what partitioning freed."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


class _Group:
    __slots__ = ("id", "params", "refs", "backward_open", "pending", "grads", "module", "owners")

    def __init__(self, gid, params, module=None, owners=None):
        self.id, self.params, self.module = gid, params, module  # module: the owner (or leaf)
        # The modules that hold the parameters directly: the owner, or a leaf's descendants.
        self.owners = owners if owners is not None else [module]
        self.refs = 0            # forwards (and gathered() scopes) using the group now
        self.backward_open = False
        self.pending = 0
        self.grads = None  # tensors over the lent gradient buffers while open for backward

    @property
    def gathered(self):
        return self.refs > 0 or self.backward_open
