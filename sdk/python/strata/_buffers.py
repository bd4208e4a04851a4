"""What the runtime needs of a NumPy array or a torch tensor: its address, element count and
dtype, without copying and without importing either library (only what the caller passed in)."""
from . import _capi

_NUMPY_DTYPES = {"float32": _capi.F32, "float16": _capi.F16, "float64": _capi.F64,
                 "int32": _capi.I32, "int64": _capi.I64, "uint8": _capi.U8}
_TORCH_DTYPES = {"torch.float32": _capi.F32, "torch.float16": _capi.F16,
                 "torch.bfloat16": _capi.BF16, "torch.float64": _capi.F64,
                 "torch.int32": _capi.I32, "torch.int64": _capi.I64, "torch.uint8": _capi.U8}


class Buffer:
    """A contiguous host buffer someone else owns: address, elements, strata dtype."""
    __slots__ = ("ptr", "count", "dtype", "obj")

    def __init__(self, ptr, count, dtype, obj):
        self.ptr, self.count, self.dtype, self.obj = ptr, count, dtype, obj


def is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def is_numpy(x):
    return type(x).__module__ == "numpy" and hasattr(x, "__array_interface__")


def buffer(x, what, writable=False):
    """Describes x (numpy.ndarray or CPU torch.Tensor, C-contiguous) or raises TypeError or
    ValueError naming `what` and what was expected."""
    if is_torch(x):
        dtype = _TORCH_DTYPES.get(str(x.dtype))
        if dtype is None:
            raise TypeError("%s: torch dtype %s is not one strata moves (float32, float16, bfloat16,"
                            " float64, int32, int64, uint8)" % (what, x.dtype))
        if x.device.type != "cpu":
            raise ValueError("%s: a %s tensor; these collectives take host (CPU) memory"
                             % (what, x.device.type))
        if not x.is_contiguous():
            raise ValueError("%s: not contiguous (strides %s); pass x.contiguous()"
                             % (what, tuple(x.stride())))
        return Buffer(x.data_ptr(), x.numel(), dtype, x)
    if is_numpy(x):
        dtype = _NUMPY_DTYPES.get(x.dtype.name)
        if dtype is None:
            raise TypeError("%s: numpy dtype %s is not one strata moves (float32, float16, float64,"
                            " int32, int64, uint8)" % (what, x.dtype))
        if not x.flags["C_CONTIGUOUS"]:
            raise ValueError("%s: not C-contiguous (strides %s); pass numpy.ascontiguousarray(x)"
                             % (what, x.strides))
        if not x.dtype.isnative:
            raise ValueError("%s: byte order %s is not this machine's" % (what, x.dtype.byteorder))
        if writable and not x.flags["WRITEABLE"]:
            raise ValueError("%s: read-only array; the result is written into it" % what)
        return Buffer(x.ctypes.data, x.size, dtype, x)
    raise TypeError("%s: expected a numpy.ndarray or a torch.Tensor, got %s"
                    % (what, type(x).__name__))


def empty_like(x, leading=None):
    """A new array/tensor of x's type and dtype; with `leading`, its first dimension becomes that
    (allgather's result: size × x.shape[0] rows, or size elements for a 0-d x)."""
    shape = tuple(x.shape)
    if leading is not None:
        shape = (leading * shape[0],) + shape[1:] if shape else (leading,)
    if is_torch(x):
        import torch
        return torch.empty(shape, dtype=x.dtype)
    import numpy
    return numpy.empty(shape, dtype=x.dtype)
