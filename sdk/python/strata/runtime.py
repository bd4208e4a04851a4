"""strata.Runtime: one embedded runtime (strata_runtime*) and the host C API as methods.

Lifetime: one runtime per process (the comm transport cannot start twice), created collectively
by every rank, closed collectively (close(), or at interpreter exit). Threading: used by one
thread at a time, like the C API. Buffers handed to register_param stay referenced here until
close, because the runtime keeps using them.
"""
import atexit
import ctypes
import json
import os
import sys
from collections import namedtuple

from . import _buffers, _capi

World = namedtuple("World", "rank size local_rank local_size")
Training = namedtuple(
    "Training", "train_batch_size micro_batch_size gradient_accumulation_steps "
    "gradient_clipping model_dtype")
ParamView = namedtuple("ParamView", "data grad count dtype")  # addresses (int or None)
StepTime = namedtuple("StepTime", "wall host comm_wait optimizer gather runtime_other")
StepResult = namedtuple("StepResult",
                        "outcome loss_scale grad_norm global_steps skipped_steps time")
LoadResult = namedtuple("LoadResult", "tag extra global_steps skipped_steps")


class StrataError(RuntimeError):
    """A runtime call failed. str(e) is the runtime's one-line message (it names the file, key,
    parameter or rank); .status is the status name (STRATA_ERR_COMM, ...), .code its number."""

    def __init__(self, code, message):
        self.code = code
        self.status = _capi.STATUS_NAMES.get(code, "status %d" % code)
        super().__init__(message)


_lib = None
_lib_path = None

def default_manifest():
    """The manifest strata.init() runs without one and without $STRATA_MANIFEST: the example's
    embedded default, examples/manifests/default.json, which `pip install .` copies into the package
    (strata/manifests/). Its plugins are found beside libstrata, and strata-run's gloo backend swaps
    the comm library through $STRATA_COMM_LIBRARY."""
    candidates = [os.path.join(_capi.PACKAGE_DIR, "manifests", "default.json"),
                  os.path.normpath(os.path.join(_capi.PACKAGE_DIR, "..", "..", "..", "examples",
                                                "manifests", "default.json"))]  # source tree
    for path in candidates:
        if os.path.exists(path):
            return path
    raise ValueError("strata: no manifest given, $STRATA_MANIFEST unset, and the default manifest "
                     "is in none of " + ", ".join(candidates))


def library():
    """libstrata, loaded on first use; (ctypes.CDLL, path)."""
    global _lib, _lib_path
    if _lib is None:
        _lib, _lib_path = _capi.load()
    return _lib, _lib_path


def _text(value):
    return None if value is None else value.encode()


def _json_text(value, what):
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json.dumps(value)
    raise TypeError("%s: expected a dict or a JSON string, got %s" % (what, type(value).__name__))


class Runtime:
    def __init__(self, manifest=None, overrides=None):
        """Creates the runtime (collective). manifest: a path, a dict (the manifest itself, plugin
        names looked up from the current folder), or None for $STRATA_MANIFEST. overrides: a
        JSON merge patch (dict or text) applied over the manifest. With neither a manifest nor
        $STRATA_MANIFEST, default_manifest()."""
        lib, _ = library()
        self._lib = lib
        self._handle = None
        self._keep = {}  # parameter index -> (data, grad): buffers the runtime holds pointers into
        self._err = _capi.sized(_capi.Error)
        options = _capi.sized(_capi.CreateOptions)
        if manifest is None:
            manifest = os.environ.get("STRATA_MANIFEST") or default_manifest()
        if isinstance(manifest, dict):
            options.manifest_json = _text(json.dumps(manifest))
            options.base_dir = _text(os.getcwd())
        elif isinstance(manifest, (str, os.PathLike)):
            options.manifest_path = _text(os.fspath(manifest))
        else:
            raise TypeError("strata: manifest: expected a path or a dict, got %s"
                            % type(manifest).__name__)
        options.overrides_json = _text(_json_text(overrides, "strata: overrides"))
        handle = ctypes.c_void_p()
        self._check(lib.strata_create(ctypes.byref(options), ctypes.byref(handle),
                                      ctypes.byref(self._err)), "strata_create")
        self._handle = handle
        self.world = self._world()
        self.training = self._training()
        atexit.register(self.close)

    # ---- lifetime -------------------------------------------------------------------------------
    def close(self):
        """strata_destroy (collective). Idempotent; also run at interpreter exit."""
        if self._handle is not None:
            horovod = sys.modules.get("strata.horovod._state")
            if horovod is not None:  # its thread may be inside the runtime
                horovod.shutdown_if_on(self)
            handle, self._handle = self._handle, None
            self._lib.strata_destroy(handle)
            self._keep.clear()

    @property
    def closed(self):
        return self._handle is None

    def _check(self, status, what):
        if status != _capi.OK:
            message = self._err.message.decode(errors="replace") or (
                "%s failed: %s" % (what, _capi.STATUS_NAMES.get(status, status)))
            raise StrataError(status, message)

    def _live(self):
        if self._handle is None:
            raise ValueError("strata: the runtime is closed")
        return self._handle

    # ---- queries --------------------------------------------------------------------------------
    def _world(self):
        w = _capi.sized(_capi.WorldInfo)
        self._check(self._lib.strata_world(self._live(), ctypes.byref(w)), "strata_world")
        return World(w.rank, w.size, w.local_rank, w.local_size)

    def _training(self):
        t = _capi.sized(_capi.TrainingInfo)
        self._check(self._lib.strata_training(self._live(), ctypes.byref(t)), "strata_training")
        return Training(t.train_batch_size, t.micro_batch_size, t.gradient_accumulation_steps,
                        t.gradient_clipping, _capi.DTYPE_NAMES.get(t.model_dtype, t.model_dtype))

    @property
    def loss_scale(self):
        scale = ctypes.c_double()
        self._check(self._lib.strata_loss_scale(self._live(), ctypes.byref(scale)),
                    "strata_loss_scale")
        return scale.value

    @property
    def lr(self):
        lr = ctypes.c_double()
        self._check(self._lib.strata_lr(self._live(), ctypes.byref(lr)), "strata_lr")
        return lr.value

    def set_lr(self, lr):
        """Overrides the learning rate from the next step on; float('nan') returns to the schedule."""
        self._check(self._lib.strata_set_lr(self._live(), float(lr), ctypes.byref(self._err)),
                    "strata_set_lr")

    def memory(self):
        """{"current": {category: bytes}, "peak": {...}, "located": {location: {category: bytes}}}"""
        m = _capi.sized(_capi.MemoryReport)
        self._check(self._lib.strata_memory(self._live(), ctypes.byref(m)), "strata_memory")
        cats = _capi.MEM_CATEGORIES
        return {"current": dict(zip(cats, m.current)), "peak": dict(zip(cats, m.peak)),
                "located": {loc: dict(zip(cats, m.located[i]))
                            for i, loc in enumerate(_capi.MEM_LOCATIONS)}}

    # ---- parameters -----------------------------------------------------------------------------
    def register_param(self, name, data, grad=None):
        """Registers one parameter (before finalize; every rank, same order). data (and grad, or
        None for runtime-owned gradients lent at gather) are numpy arrays or CPU tensors of the
        model dtype, contiguous; the runtime uses their memory directly until close."""
        d = _buffers.buffer(data, "parameter %r data" % name, writable=True)
        g = None if grad is None else _buffers.buffer(grad, "parameter %r grad" % name, True)
        if g is not None and (g.count != d.count or g.dtype != d.dtype):
            raise ValueError("parameter %r: grad has %d %s elements, data %d %s" % (
                name, g.count, _capi.DTYPE_NAMES[g.dtype], d.count, _capi.DTYPE_NAMES[d.dtype]))
        index = self.register_param_raw(name, d.dtype, d.ptr, None if g is None else g.ptr, d.count)
        self._keep[index] = (data, grad)
        return index

    def forget_data(self, index):
        """Drops this object's reference to parameter `index`'s registered data, which the
        runtime stops using after finalize when it partitions the parameter (ZeRO stage 3:
        view(index).data is not the registered buffer). Refused for any other parameter."""
        kept = self._keep.get(index)
        if kept is None or kept[0] is None:
            return
        view = self.view(index)
        if view.data == _buffers.buffer(kept[0], "parameter data", writable=True).ptr:
            raise ValueError("forget_data: the runtime still uses parameter %d's data" % index)
        self._keep[index] = (None, kept[1])

    def register_param_raw(self, name, dtype, data_ptr, grad_ptr, count):
        """register_param with addresses; the caller keeps the memory alive until close. A
        data_ptr of None registers deferred values (API 1.9; ZeRO stage 3, a parameter in a
        group): zero until written through gather(for_write=True)."""
        desc = _capi.sized(_capi.ParamDesc)
        desc.name, desc.dtype, desc.count = _text(name), dtype, count
        desc.device.type, desc.device.index = _capi.DEVICE_HOST, 0
        desc.data, desc.grad = data_ptr, grad_ptr
        index = ctypes.c_uint32()
        self._check(self._lib.strata_register_param(self._live(), ctypes.byref(desc),
                                                    ctypes.byref(index), ctypes.byref(self._err)),
                    "strata_register_param")
        return index.value

    def define_group(self, name, params):
        ids = (ctypes.c_uint32 * len(params))(*params)
        group = ctypes.c_uint32()
        self._check(self._lib.strata_define_group(self._live(), _text(name), ids, len(params),
                                                  ctypes.byref(group), ctypes.byref(self._err)),
                    "strata_define_group")
        return group.value

    def finalize(self):
        self._check(self._lib.strata_finalize(self._live(), ctypes.byref(self._err)),
                    "strata_finalize")

    def grad_ready(self, index):
        self._check(self._lib.strata_grad_ready(self._live(), index, ctypes.byref(self._err)),
                    "strata_grad_ready")

    def gather(self, group, for_backward=False, for_write=False):
        """strata_gather; for_write (API 1.9, ZeRO stage 3): what the host writes into the
        group's views until release becomes the parameters' values (write the same on every
        rank)."""
        flags = (_capi.GATHER_FOR_BACKWARD if for_backward else 0) | \
            (_capi.GATHER_FOR_WRITE if for_write else 0)
        self._check(self._lib.strata_gather(self._live(), group, flags, ctypes.byref(self._err)),
                    "strata_gather")

    def release(self, group):
        self._check(self._lib.strata_release(self._live(), group, ctypes.byref(self._err)),
                    "strata_release")

    def view(self, index):
        v = _capi.sized(_capi.ParamView)
        self._check(self._lib.strata_view_param(self._live(), index, ctypes.byref(v),
                                                ctypes.byref(self._err)), "strata_view_param")
        return ParamView(v.data, v.grad, v.count, v.dtype)

    def step(self):
        """strata_step (collective), after every micro-batch's backward."""
        r = _capi.sized(_capi.StepResult)
        self._check(self._lib.strata_step(self._live(), ctypes.byref(r), ctypes.byref(self._err)),
                    "strata_step")
        time = StepTime(r.wall_seconds, r.host_seconds, r.comm_wait_seconds, r.optimizer_seconds,
                        r.gather_seconds, r.runtime_other_seconds)
        return StepResult(_capi.OUTCOMES.get(r.outcome, r.outcome), r.loss_scale, r.grad_norm,
                          r.global_steps, r.skipped_steps, time)

    # ---- collectives on host buffers (blocking, collective, no copies) --------------------------
    def allreduce_(self, x, op="sum"):
        """Reduces x over ranks in place; returns x."""
        return self._allreduce(x, x, op)

    def allreduce_address(self, address, count, dtype, op):
        """allreduce_ on raw memory (`count` elements of strata dtype `dtype` at `address`)."""
        self._check(self._lib.strata_allreduce(self._live(), address, address, count, dtype,
                                               _capi.OPS[op], ctypes.byref(self._err)),
                    "strata_allreduce")

    def allreduce(self, x, op="sum"):
        """Returns a new array/tensor holding the reduction of x over ranks."""
        _buffers.buffer(x, "strata.allreduce input")  # refuses what is not an array before use
        return self._allreduce(x, _buffers.empty_like(x), op)

    def _allreduce(self, x, out, op):
        code = _capi.OPS.get(op)
        if code is None:
            raise ValueError("strata.allreduce: op %r; expected one of %s" % (op, ", ".join(_capi.OPS)))
        s = _buffers.buffer(x, "strata.allreduce input")
        r = _buffers.buffer(out, "strata.allreduce output", writable=True)
        self._check(self._lib.strata_allreduce(self._live(), s.ptr, r.ptr, s.count, s.dtype, code,
                                               ctypes.byref(self._err)), "strata_allreduce")
        return out

    def allgather(self, x):
        """Every rank's x concatenated along the first dimension (0-d: a vector of size)."""
        s = _buffers.buffer(x, "strata.allgather input")
        out = _buffers.empty_like(x, leading=self.world.size)
        r = _buffers.buffer(out, "strata.allgather output", writable=True)
        self._check(self._lib.strata_allgather(self._live(), s.ptr, r.ptr, s.count, s.dtype,
                                               ctypes.byref(self._err)), "strata_allgather")
        return out

    def broadcast_(self, x, root=0):
        """Overwrites x with root's x; returns x."""
        b = _buffers.buffer(x, "strata.broadcast buffer", writable=True)
        self._check(self._lib.strata_broadcast(self._live(), b.ptr, b.count, b.dtype, int(root),
                                               ctypes.byref(self._err)), "strata_broadcast")
        return x

    def broadcast(self, x, root=0):
        """Returns a new array/tensor holding root's x."""
        _buffers.buffer(x, "strata.broadcast buffer")
        out = _buffers.empty_like(x)
        if self.world.rank == root:
            out[...] = x
        return self.broadcast_(out, root)

    def group(self, color, key=None):
        """strata_group_create (API 1.13; collective over every rank, in the same order as the
        other collectives): the ranks that pass the same color (>= 0) get a strata Group of just
        them, ranked by key (default: the world rank); color -1 gives None. Needs a comm plugin
        with sub-groups (split, ABI 1.10)."""
        from ._group import Group
        handle = ctypes.c_void_p()
        self._check(self._lib.strata_group_create(
            self._live(), int(color), int(self.world.rank if key is None else key),
            ctypes.byref(handle), ctypes.byref(self._err)), "strata_group_create")
        return Group(self, handle) if handle.value else None

    def barrier(self):
        self._check(self._lib.strata_barrier(self._live(), ctypes.byref(self._err)),
                    "strata_barrier")

    # ---- checkpoints ----------------------------------------------------------------------------
    def save(self, dir, tag=None, extra=None, blocking=True):
        """strata_save (collective, between steps). extra: a dict kept with the checkpoint."""
        args = _capi.sized(_capi.SaveArgs)
        args.dir, args.tag = _text(os.fspath(dir)), _text(tag)
        args.extra_json = _text(None if extra is None else json.dumps(extra))
        args.blocking = 1 if blocking else 0
        self._check(self._lib.strata_save(self._live(), ctypes.byref(args), ctypes.byref(self._err)),
                    "strata_save")

    def save_wait(self):
        self._check(self._lib.strata_save_wait(self._live(), ctypes.byref(self._err)),
                    "strata_save_wait")

    def load(self, dir, tag=None):
        """strata_load (collective, after finalize): parameters, optimizer state, counters."""
        args = _capi.sized(_capi.LoadArgs)
        args.dir, args.tag = _text(os.fspath(dir)), _text(tag)
        out = _capi.sized(_capi.LoadResult)
        self._check(self._lib.strata_load(self._live(), ctypes.byref(args), ctypes.byref(out),
                                          ctypes.byref(self._err)), "strata_load")
        return LoadResult(out.tag.decode(), json.loads(out.extra_json.decode()), out.global_steps,
                          out.skipped_steps)

    def set_host_state(self, state):
        """strata_set_host_state (API 1.11): `state` (a dict: data position, seeds) is kept by the
        next save the manifest's checkpoint block makes. Set it before the step() that ends an
        optimizer step, as where the data continues after that step."""
        self._check(self._lib.strata_set_host_state(self._live(), _text(json.dumps(state)),
                                                    ctypes.byref(self._err)), "strata_set_host_state")

    def join(self):
        """strata_join (API 1.12; the manifest's "join": true): this rank has no more
        micro-batches; it takes part in the others' with zero gradients until every rank has
        joined. Returns how many of the others' micro-batches it took part in."""
        mirrored = ctypes.c_uint64(0)
        self._check(self._lib.strata_join(self._live(), ctypes.byref(mirrored),
                                          ctypes.byref(self._err)), "strata_join")
        return mirrored.value

    def resumed(self):
        """What the manifest's checkpoint block (auto_resume) loaded at finalize, as load() returns
        it (its extra: the host state saved with it); None when it loaded nothing."""
        out = _capi.sized(_capi.LoadResult)
        self._check(self._lib.strata_resumed(self._live(), ctypes.byref(out), ctypes.byref(self._err)),
                    "strata_resumed")
        if not out.tag:
            return None
        return LoadResult(out.tag.decode(), json.loads(out.extra_json.decode()), out.global_steps,
                          out.skipped_steps)
