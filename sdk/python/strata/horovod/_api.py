"""Horovod's collective functions (horovod.torch.mpi_ops) on the strata.horovod engine.

Every *_async call queues an operation and returns a handle for poll() / synchronize(); the
blocking forms are the async ones followed by synchronize, and the ones whose result carries a
gradient (allreduce, grouped_allreduce, allgather, grouped_allgather, broadcast, alltoall,
reducescatter, grouped_reducescatter) are autograd functions with Horovod's backward rules.
"""
import torch

from . import _collective_ops as C
from . import _state
from . import _tensors as T
from ._collective_ops import Adasum, Average, Sum
from ._compression import Compression
from ._process_sets import check_process_set, global_process_set


def _resolve_op(op, average, what):
    if op is not None and average is not None:
        raise ValueError("strata.horovod.%s: give op or the deprecated average, not both" % what)
    if average is not None:
        op = Average if average else Sum
    op = Average if op is None else op
    if op == Adasum:
        raise NotImplementedError("strata.horovod.%s: op=hvd.Adasum is not provided by Strata; use "
                                  "hvd.Average (or hvd.Sum)" % what)
    if op not in C.OP_NAMES:
        raise ValueError("strata.horovod.%s: op %r; expected hvd.Average, Sum, Min, Max or "
                         "Product" % (what, op))
    return op


def _tensors(tensors, what):
    """(tensors, the first error found in them or None). Anything but a tensor raises here; a
    tensor the collectives cannot take (dtype, device, layout) travels as the operation's local
    error instead, so that every rank fails together and unnamed operations keep their places."""
    tensors = list(tensors)
    error = None
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError("strata.horovod.%s: expected a torch.Tensor, got %s"
                            % (what, type(t).__name__))
        try:
            T.check_tensor(t, "strata.horovod." + what)
        except (TypeError, NotImplementedError) as e:
            error = error or e
    return tensors, error


def _submit(op, post=None, error=None, process_set=None):
    op.pset = check_process_set(process_set, op.kind_name)
    if error is not None and op.local_error is None:
        op.local_error = error
    if post is not None:
        op.post = post
    return _state.engine().submit(op)


# ---- handles --------------------------------------------------------------------------------
def poll(handle):
    """True once the operation behind handle has finished (its result is ready)."""
    return handle.done()


def synchronize(handle):
    """Waits for the operation and returns its result; raises its error (every rank alike)."""
    return handle.wait()


# ---- allreduce ------------------------------------------------------------------------------
def _allreduce_async(what, tensors, in_place, grouped, average, name, op, prescale, postscale,
                     process_set):
    """The four allreduce_async forms: one tensor or a group, a new result or in place."""
    op = _resolve_op(op, average, what)
    check_process_set(process_set, what)
    tensors, error = _tensors(tensors, what)
    return _submit(C.Allreduce(tensors, tensors if in_place else None, name, op, prescale,
                               postscale, grouped),
                   None if grouped else (lambda out: out[0]), error=error,
                   process_set=process_set)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                    postscale_factor=1.0, process_set=global_process_set):
    return _allreduce_async("allreduce_async", [tensor], False, False, average, name, op,
                            prescale_factor, postscale_factor, process_set)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
                     postscale_factor=1.0, process_set=global_process_set):
    return _allreduce_async("allreduce_async_", [tensor], True, False, average, name, op,
                            prescale_factor, postscale_factor, process_set)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set):
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor,
                                        postscale_factor, process_set))


class _AllreduceFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, prescale, postscale, ps):
        ctx.op, ctx.prescale, ctx.postscale, ctx.ps = op, prescale, postscale, ps
        return synchronize(allreduce_async(tensor, None, name, op, prescale, postscale, ps))

    @staticmethod
    def backward(ctx, grad):
        return allreduce(grad, op=ctx.op, prescale_factor=ctx.prescale,
                         postscale_factor=ctx.postscale,
                         process_set=ctx.ps), None, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    """The reduction of tensor over ranks, in a new tensor (differentiable)."""
    op = _resolve_op(op, average, "allreduce")
    check_process_set(process_set, "allreduce")
    compressed, ctx = compression.compress(tensor)
    out = _AllreduceFn.apply(compressed, name, op, prescale_factor, postscale_factor, process_set)
    return compression.decompress(out, ctx)


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                            postscale_factor=1.0, process_set=global_process_set):
    return _allreduce_async("grouped_allreduce_async", tensors, False, True, average, name, op,
                            prescale_factor, postscale_factor, process_set)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    return _allreduce_async("grouped_allreduce_async_", tensors, True, True, average, name, op,
                            prescale_factor, postscale_factor, process_set)


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                       postscale_factor=1.0, process_set=global_process_set):
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor,
                                                postscale_factor, process_set))


class _GroupedAllreduceFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, prescale, postscale, ps, *tensors):
        ctx.op, ctx.prescale, ctx.postscale, ctx.ps = op, prescale, postscale, ps
        return tuple(synchronize(grouped_allreduce_async(tensors, None, name, op, prescale,
                                                         postscale, ps)))

    @staticmethod
    def backward(ctx, *grads):
        reduced = grouped_allreduce(list(grads), op=ctx.op, prescale_factor=ctx.prescale,
                                    postscale_factor=ctx.postscale, process_set=ctx.ps)
        return (None, None, None, None, None) + tuple(reduced)


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None,
                      prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    op = _resolve_op(op, average, "grouped_allreduce")
    check_process_set(process_set, "grouped_allreduce")
    pairs = [compression.compress(t) for t in tensors]
    out = _GroupedAllreduceFn.apply(name, op, prescale_factor, postscale_factor, process_set,
                                    *[p[0] for p in pairs])
    return [compression.decompress(o, p[1]) for o, p in zip(out, pairs)]


def sparse_allreduce_async(tensor, name, op, process_set=global_process_set):
    """A sparse (COO) tensor's reduction over ranks, as Horovod computes it: every rank's indices
    and values gathered (allgather), duplicates summed when the result is coalesced; Average
    divides the values by the number of ranks. Returns a callable that waits and gives the sparse
    result (Horovod's handle for this function)."""
    op = _resolve_op(op, None, "sparse_allreduce_async")
    if op not in (Sum, Average):
        raise NotImplementedError("strata.horovod.sparse_allreduce_async: op %s; sparse tensors "
                                  "take hvd.Sum or hvd.Average" % C.OP_NAMES[op])
    check_process_set(process_set, "sparse_allreduce_async")
    if not (isinstance(tensor, torch.Tensor) and tensor.is_sparse):
        raise TypeError("strata.horovod.sparse_allreduce_async: expected a sparse torch.Tensor, got "
                        "%s" % (tensor.layout if isinstance(tensor, torch.Tensor)
                                else type(tensor).__name__))
    t = tensor.coalesce()
    base = name if name is not None else None
    indices = allgather_async(t.indices().transpose(0, 1).contiguous(),
                              name=None if base is None else "%s.indices" % base,
                              process_set=process_set)
    values = allgather_async(t.values().contiguous(),
                             name=None if base is None else "%s.values" % base,
                             process_set=process_set)
    size = process_set.size()

    def handle():
        v = synchronize(values)
        i = synchronize(indices)
        if op == Average:
            v = v / size
        return torch.sparse_coo_tensor(i.transpose(0, 1), v, tensor.size())
    return handle


# ---- allgather ------------------------------------------------------------------------------
def allgather_async(tensor, name=None, process_set=global_process_set):
    check_process_set(process_set, "allgather_async")
    (tensor,), error = _tensors([tensor], "allgather_async")
    return _submit(C.Allgather([tensor], name, False), error=error, process_set=process_set)


class _AllgatherFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, ps):
        ctx.dim, ctx.ps = tensor.shape[0] if tensor.dim() else 1, ps
        return synchronize(allgather_async(tensor, name, ps))

    @staticmethod
    def backward(ctx, grad):
        reduced = allreduce(grad, op=Average, process_set=ctx.ps)
        dims = allgather(torch.tensor([ctx.dim], dtype=torch.int64), process_set=ctx.ps)
        offset = int(dims[:ctx.ps.rank()].sum())
        return reduced.narrow(0, offset, ctx.dim), None, None


def allgather(tensor, name=None, process_set=global_process_set):
    """Every rank's tensor concatenated along the first dimension (sizes may differ)."""
    check_process_set(process_set, "allgather")
    return _AllgatherFn.apply(tensor, name, process_set)


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    check_process_set(process_set, "grouped_allgather_async")
    tensors, error = _tensors(tensors, "grouped_allgather_async")
    return _submit(C.Allgather(tensors, name, True), error=error, process_set=process_set)


class _GroupedAllgatherFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, ps, *tensors):
        ctx.dims, ctx.ps = [t.shape[0] if t.dim() else 1 for t in tensors], ps
        return tuple(synchronize(grouped_allgather_async(tensors, name, ps)))

    @staticmethod
    def backward(ctx, *grads):
        reduced = grouped_allreduce(list(grads), op=Average, process_set=ctx.ps)
        dims = allgather(torch.tensor([ctx.dims], dtype=torch.int64), process_set=ctx.ps)
        me = ctx.ps.rank()
        out = []
        for i, g in enumerate(reduced):
            offset = int(dims[:me, i].sum())
            out.append(g.narrow(0, offset, ctx.dims[i]))
        return (None, None) + tuple(out)


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    check_process_set(process_set, "grouped_allgather")
    return list(_GroupedAllgatherFn.apply(name, process_set, *tensors))


# ---- broadcast ------------------------------------------------------------------------------
def _broadcast_async(what, tensor, in_place, root_rank, name, process_set):
    """root_rank is a global rank, in a process set too (Horovod's); the set's group counts its
    members from 0."""
    check_process_set(process_set, what)
    (tensor,), error = _tensors([tensor], what)
    if process_set is not None and process_set.ranks is not None:
        if root_rank in process_set.ranks:
            root_rank = process_set.ranks.index(root_rank)
        else:
            error = error or ValueError("strata.horovod.%s: root_rank %d is not in %r"
                                        % (what, root_rank, process_set))
            root_rank = -1
    out = tensor if in_place else torch.empty_like(tensor)
    return _submit(C.Broadcast(tensor, out, root_rank, name), error=error, process_set=process_set)


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    return _broadcast_async("broadcast_async", tensor, False, root_rank, name, process_set)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    return _broadcast_async("broadcast_async_", tensor, True, root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


class _BroadcastFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank, name, ps):
        ctx.root, ctx.ps = root_rank, ps
        return synchronize(broadcast_async(tensor, root_rank, name, ps))

    @staticmethod
    def backward(ctx, grad):
        reduced = allreduce(grad, op=Average, process_set=ctx.ps)
        if _state.engine().rank != ctx.root:
            reduced = reduced * 0
        return reduced, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """root_rank's tensor, in a new tensor on every rank (differentiable)."""
    check_process_set(process_set, "broadcast")
    return _BroadcastFn.apply(tensor, root_rank, name, process_set)


# ---- alltoall -------------------------------------------------------------------------------
def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    check_process_set(process_set, "alltoall_async")
    (tensor,), error = _tensors([tensor], "alltoall_async")
    size = process_set.size()
    return _submit(C.Alltoall(tensor, splits, name, size), error=error, process_set=process_set)


class _AlltoallFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, splits, name, ps):
        output, received = synchronize(alltoall_async(tensor, splits, name, ps))
        ctx.received, ctx.ps = received, ps
        if splits is None:
            return output
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad, *unused):
        back, _ = alltoall(grad, splits=ctx.received, process_set=ctx.ps)
        return back, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Rows scattered to ranks by splits and gathered from them: the received rows, and with
    splits given also how many rows came from each rank."""
    check_process_set(process_set, "alltoall")
    return _AlltoallFn.apply(tensor, splits, name, process_set)


# ---- reducescatter --------------------------------------------------------------------------
def _reducescatter_op(op, what):
    if op == Adasum:
        raise NotImplementedError("strata.horovod.%s: op=hvd.Adasum is not provided by Strata; use "
                                  "hvd.Average or hvd.Sum" % what)
    return op


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set,
                        prescale_factor=1.0, postscale_factor=1.0):
    check_process_set(process_set, "reducescatter_async")
    op = _reducescatter_op(op, "reducescatter_async")
    (tensor,), error = _tensors([tensor], "reducescatter_async")
    return _submit(C.Reducescatter([tensor], name, op, prescale_factor, postscale_factor, False),
                   lambda out: out[0], error=error, process_set=process_set)


class _ReducescatterFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, name, op, prescale, postscale, ps):
        ctx.op, ctx.scale, ctx.ps = op, prescale * postscale, ps
        return synchronize(reducescatter_async(tensor, name, op, ps, prescale_factor=prescale,
                                               postscale_factor=postscale))

    @staticmethod
    def backward(ctx, grad):
        if ctx.op == Sum:
            grad = grad * ctx.ps.size()
        if ctx.scale != 1.0:
            grad = grad * ctx.scale
        return allgather(grad, process_set=ctx.ps), None, None, None, None, None


def reducescatter(tensor, name=None, compression=Compression.none, op=Average,
                  process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0):
    """This rank's block of the reduction (rows split as evenly as they go, the first ranks one
    more)."""
    check_process_set(process_set, "reducescatter")
    _reducescatter_op(op, "reducescatter")
    compressed, ctx = compression.compress(tensor)
    out = _ReducescatterFn.apply(compressed, name, op, prescale_factor, postscale_factor,
                                 process_set)
    return compression.decompress(out, ctx)


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set,
                                prescale_factor=1.0, postscale_factor=1.0):
    check_process_set(process_set, "grouped_reducescatter_async")
    op = _reducescatter_op(op, "grouped_reducescatter_async")
    tensors, error = _tensors(tensors, "grouped_reducescatter_async")
    return _submit(C.Reducescatter(tensors, name, op, prescale_factor, postscale_factor, True),
                   error=error, process_set=process_set)


class _GroupedReducescatterFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, name, op, prescale, postscale, ps, *tensors):
        ctx.op, ctx.scale, ctx.ps = op, prescale * postscale, ps
        return tuple(synchronize(grouped_reducescatter_async(
            tensors, name, op, ps, prescale_factor=prescale, postscale_factor=postscale)))

    @staticmethod
    def backward(ctx, *grads):
        factor = (ctx.ps.size() if ctx.op == Sum else 1) * ctx.scale
        grads = [g * factor if factor != 1 else g for g in grads]
        return (None, None, None, None, None) + tuple(grouped_allgather(grads,
                                                                        process_set=ctx.ps))


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0,
                          postscale_factor=1.0):
    check_process_set(process_set, "grouped_reducescatter")
    _reducescatter_op(op, "grouped_reducescatter")
    pairs = [compression.compress(t) for t in tensors]
    out = _GroupedReducescatterFn.apply(name, op, prescale_factor, postscale_factor, process_set,
                                        *[p[0] for p in pairs])
    return [compression.decompress(o, p[1]) for o, p in zip(out, pairs)]


# ---- join and barrier -----------------------------------------------------------------------
def join(device=-1):
    """This rank has no more work: it takes part in the others' allreduces with zeros until every
    rank has joined. Returns the rank that joined last (the same on every rank). Raises
    RuntimeError, naming them, once a rank shuts strata.horovod down without joining."""
    engine = _state.engine()
    return synchronize(engine.submit(C.Join(engine)))


def barrier(process_set=global_process_set):
    barrier_op = C.Barrier(None)
    barrier_op.pset = check_process_set(process_set, "barrier")
    synchronize(_state.engine().submit(barrier_op))
