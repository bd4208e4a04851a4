"""Torch tensors as the runtime moves them: dtype codes for the negotiation, the dtype a reduction
runs in, byte views for operations that only move data, and Horovod's scaling rules."""
import torch

from strata import _capi

# Negotiation codes (any dtype a collective accepts; 0 is "none").
CODES = {torch.float32: 1, torch.float16: 2, torch.bfloat16: 3, torch.float64: 4, torch.int32: 5,
         torch.int64: 6, torch.uint8: 7, torch.int8: 8, torch.int16: 9, torch.bool: 10}
DTYPES = {code: dtype for dtype, code in CODES.items()}
# What the runtime reduces each in: its own dtype, or int32 for the narrow integers (then narrowed
# back, wrapping as C does). bool has no reduction.
REDUCE_AS = {torch.float32: torch.float32, torch.float16: torch.float16,
             torch.bfloat16: torch.bfloat16, torch.float64: torch.float64,
             torch.int32: torch.int32, torch.int64: torch.int64, torch.uint8: torch.uint8,
             torch.int8: torch.int32, torch.int16: torch.int32}
STRATA_DTYPE = {torch.float32: _capi.F32, torch.float16: _capi.F16, torch.bfloat16: _capi.BF16,
                torch.float64: _capi.F64, torch.int32: _capi.I32, torch.int64: _capi.I64,
                torch.uint8: _capi.U8}


def check_tensor(t, what):
    """Refuses what the collectives cannot take, naming the function and what was expected."""
    if not isinstance(t, torch.Tensor):
        raise TypeError("%s: expected a torch.Tensor, got %s" % (what, type(t).__name__))
    if t.dtype not in CODES:
        raise TypeError("%s: dtype %s is not one strata.horovod moves (%s)"
                        % (what, t.dtype, ", ".join(str(d).replace("torch.", "") for d in CODES)))
    if t.device.type != "cpu":
        raise NotImplementedError(
            "%s: a %s tensor; strata.horovod's collectives run on host memory. Move it with "
            ".cpu(), or train on the GPU through strata.torch with an NCCL manifest" % (what, t.device))
    if t.is_sparse:
        raise NotImplementedError("%s: a sparse tensor; pass t.to_dense() (or sparse_as_dense=True "
                                  "to DistributedOptimizer)" % what)


def as_bytes(t):
    """A flat uint8 view of contiguous t (no copy)."""
    flat = t.reshape(-1)
    return flat if flat.dtype == torch.uint8 else flat.view(torch.uint8)


def is_float(dtype):
    return dtype.is_floating_point


def scaled(t, factor):
    """t * factor as Horovod scales: integers in float64 (then truncated), f16/bf16 in float32."""
    if factor == 1.0:
        return t
    if is_float(t.dtype):
        wide = torch.float32 if t.dtype in (torch.float16, torch.bfloat16) else t.dtype
        return (t.to(wide) * factor).to(t.dtype)
    return (t.to(torch.float64) * factor).to(t.dtype)


def divided(t, by):
    """t / by: floats in their own dtype (f16/bf16 through float32), integers truncating."""
    if is_float(t.dtype):
        wide = torch.float32 if t.dtype in (torch.float16, torch.bfloat16) else t.dtype
        return (t.to(wide) / by).to(t.dtype)
    return torch.div(t, by, rounding_mode="trunc")


def identity(dtype, count, op):
    """`count` elements of reduce dtype `dtype` that leave `op` unchanged (a joined rank's part)."""
    from . import _collective_ops as _ops
    if op in (_ops.Sum, _ops.Average):
        return torch.zeros(count, dtype=dtype)
    if op == _ops.Product:
        return torch.ones(count, dtype=dtype)
    if is_float(dtype):
        return torch.full((count,), float("inf") if op == _ops.Min else float("-inf"), dtype=dtype)
    info = torch.iinfo(dtype)
    return torch.full((count,), info.max if op == _ops.Min else info.min, dtype=dtype)
