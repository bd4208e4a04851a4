"""The pieces strata.torch uses to keep ZeRO stage 3's parameters partitioned inside a torch module.

At stage 3 the runtime holds each rank's slice of a partitioned parameter; the whole parameter
exists only between strata_gather and strata_release of its group, in runtime memory. So that the
module holds no full copy between uses (as DeepSpeed's ZeRO-3 does):
- the parameter's `data` is an empty placeholder outside its module's forward and backward, and
  a tensor over the runtime's gathered buffer (no copy) inside them;
- what autograd saves for backward is not that buffer but a handle (saved-tensor hooks): the
  buffer is released after forward, and backward gathers the group again and reads it anew;
- a pre-backward function on the module's outputs gathers the group before the module's backward
  nodes run, so that autograd's gradient accumulation sees the parameter's real shape;
- any other use of a placeholder (a parameter read outside its module, model.state_dict()) raises
  an error naming the parameter instead of computing with an empty tensor.
"""
import ctypes

import torch


def tensor_at(address, count, dtype, shape):
    """A tensor over `count` elements of runtime memory at `address` (no copy). Valid only while
    the runtime keeps that memory where it is (see strata_view_param)."""
    size = count * torch.tensor([], dtype=dtype).element_size()
    return torch.frombuffer((ctypes.c_byte * size).from_address(address), dtype=dtype).view(shape)


def storage_base(t):
    """The address a tensor's storage starts at (cheaper than t.storage().data_ptr())."""
    return t.data_ptr() - t.storage_offset() * t.element_size()


# Tensor methods that read metadata or set attributes: allowed on a placeholder.
_METADATA_CALLS = frozenset(("__get__", "__set__", "__delete__", "size", "dim", "ndimension",
                             "numel", "nelement", "element_size", "is_floating_point",
                             "is_complex", "__repr__", "__format__", "__hash__", "__eq__"))


class PartitionedParameter(torch.nn.Parameter):
    """The class a partitioned parameter is given (p.__class__), so that a torch operation on it
    while it is a placeholder raises an error naming it. Everything else is nn.Parameter's."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", "") not in _METADATA_CALLS:
            for a in _flat(args, kwargs):
                if isinstance(a, PartitionedParameter):
                    rec = getattr(a, "_strata_rec", None)
                    if rec is not None and rec.live is None:
                        raise rec.used_outside(getattr(func, "__name__", repr(func)))
        return super().__torch_function__(func, types, args, kwargs or {})


def _flat(args, kwargs):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a
    if kwargs:
        yield from kwargs.values()


class Saved:
    """What autograd keeps instead of a tensor over a gathered buffer: the parameter and where in
    it the saved tensor lay."""
    __slots__ = ("rec", "size", "stride", "offset")

    def __init__(self, rec, t):
        self.rec, self.size, self.stride, self.offset = rec, t.size(), t.stride(), t.storage_offset()


class SavedTensorHooks:
    """The pack and unpack hooks, pushed around each module's forward (innermost, so that a
    checkpointing library's own hooks do not keep a gathered buffer either)."""

    def __init__(self, owner):
        self.owner = owner
        self.live = {}  # storage address of a gathered parameter's tensor -> its _Param

    def pack(self, t):
        if self.live and t.numel() > 0:
            rec = self.live.get(storage_base(t))
            if rec is not None and rec.live is not None:
                return Saved(rec, t)
        return t

    def unpack(self, saved):
        if not isinstance(saved, Saved):
            return saved
        rec = saved.rec
        if rec.live is None:
            self.owner._open_backward(rec.group)
        return rec.live.as_strided(saved.size, saved.stride, saved.offset)

    def push(self):
        scope = torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)
        scope.__enter__()
        return scope


class _PreBackward(torch.autograd.Function):
    """Identity on a module's output whose backward gathers the module's groups for backward."""

    @staticmethod
    def forward(ctx, owner, groups, x):
        ctx.owner, ctx.groups = owner, groups
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        for group in ctx.groups:
            ctx.owner._open_backward(group)
        return None, None, grad


def wrap_outputs(output, owner, groups):
    """`output` (a tensor, or tuples, lists and dicts of them) with every tensor that requires a
    gradient passed through _PreBackward."""
    if isinstance(output, torch.Tensor):
        if output.requires_grad:
            return _PreBackward.apply(owner, groups, output)
        return output
    if isinstance(output, tuple) and hasattr(output, "_fields"):  # a namedtuple
        return type(output)(*(wrap_outputs(o, owner, groups) for o in output))
    if isinstance(output, (tuple, list)):
        return type(output)(wrap_outputs(o, owner, groups) for o in output)
    if isinstance(output, dict):
        return type(output)((k, wrap_outputs(v, owner, groups)) for k, v in output.items())
    return output
