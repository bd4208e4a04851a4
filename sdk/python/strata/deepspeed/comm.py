"""deepspeed.comm's common functions on the Strata runtime (collective, blocking, on CPU tensors,
over every rank). The runtime starts in deepspeed.initialize, with the ds_config: rank and world
size are known before (from the launcher's environment), collectives only after.

new_group(ranks) makes a sub-group (a strata Group: the comm stratum's split), collective over
every rank as torch's; group= then runs a collective on its members, with src/dst given as global
ranks, as torch.distributed does."""
import os

import strata

from . import _launch


class ReduceOp:
    SUM = "sum"
    AVG = "avg"
    MIN = "min"
    MAX = "max"
    PRODUCT = "product"


def init_distributed(dist_backend=None, auto_mpi_discovery=True, distributed_port=29500,
                     verbose=True, timeout=None, init_method=None, dist_init_required=None,
                     config=None, rank=-1, world_size=-1):
    """Records that the script wants torch.distributed too: deepspeed.initialize (which starts the
    runtime) then makes a gloo process group beside it, for DistributedSampler and direct
    torch.distributed calls. If the runtime is already up, the group is made now."""
    _launch.want_torch_group(dist_init_required is not False)
    if strata.is_initialized():
        _launch.ensure_torch_group(strata.runtime())


def is_initialized():
    return strata.is_initialized()


def _env_world():
    from ._zero_init import _world
    return _world()


class ProcessGroup:
    """What new_group returns: its ranks (global, sorted) and, on its members, the strata Group."""

    def __init__(self, ranks, group):
        self.ranks, self._group = ranks, group

    def __repr__(self):
        return "ProcessGroup(ranks=%s)" % self.ranks


def get_rank(group=None):
    if group is not None:
        return _member(group, "get_rank").rank
    return strata.rank() if strata.is_initialized() else _env_world()[0]


def get_world_size(group=None):
    if group is not None:
        return len(_checked(group, "get_world_size").ranks)
    return strata.size() if strata.is_initialized() else _env_world()[1]


def get_local_rank():
    if strata.is_initialized():
        return strata.local_rank()
    for key in ("OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK", "SLURM_LOCALID"):
        if key in os.environ:
            return int(os.environ[key])
    return 0


def _checked(group, what):
    if not isinstance(group, ProcessGroup):
        raise TypeError("strata.deepspeed.comm.%s: group: expected what new_group returned, got %s"
                        % (what, type(group).__name__))
    return group


def _member(group, what):
    """The strata Group of `group` on this rank; ValueError where this rank is not a member."""
    g = _checked(group, what)
    if g._group is None:
        raise ValueError("strata.deepspeed.comm.%s: this rank (%d) is not in %r"
                         % (what, strata.rank(), g))
    return g._group


def _target(group, what):
    """The runtime (group None) or the group's strata Group."""
    rt = _runtime(what)
    return rt if group is None else _member(group, what)


def _runtime(what):
    if not strata.is_initialized():
        raise RuntimeError("strata.deepspeed.comm.%s: the runtime starts in deepspeed.initialize "
                           "(it needs the ds_config); call collectives after it" % what)
    return strata.runtime()


class _Done:
    """What async_op=True returns: the work is already complete."""

    def wait(self, timeout=None):
        return True

    def is_completed(self):
        return True


def _finish(async_op):
    return _Done() if async_op else None


def _op_name(op):
    """"sum" for ReduceOp.SUM here, torch's ReduceOp.SUM, or "SUM"."""
    name = op if isinstance(op, str) else getattr(op, "name", str(op))
    return name.lower().rsplit(".", 1)[-1]


def _rows(rt, tensor):
    """Every member's `tensor` as one row each (an allgather of the flattened tensor)."""
    return rt.allgather(tensor.detach().contiguous().view(1, -1))


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """In place on `tensor` over every rank (or the group's)."""
    rt = _target(group, "all_reduce")
    name = _op_name(op)
    if name == "product":
        tensor.copy_(_rows(rt, tensor).prod(dim=0).view(tensor.shape))
        return _finish(async_op)
    if name not in ("sum", "avg", "min", "max"):
        raise ValueError("strata.deepspeed.comm.all_reduce: op %r; expected ReduceOp.SUM, AVG, MIN, "
                         "MAX or PRODUCT" % (op,))
    if tensor.is_contiguous():
        rt.allreduce_(tensor, name)
    else:
        tensor.copy_(rt.allreduce_(tensor.contiguous(), name))
    return _finish(async_op)


def broadcast(tensor, src, group=None, async_op=False):
    """`src` is a global rank, as in torch.distributed (in a group: one of its members)."""
    rt = _target(group, "broadcast")
    root = src
    if group is not None:
        if src not in group.ranks:
            raise ValueError("strata.deepspeed.comm.broadcast: src %d is not in %r" % (src, group))
        root = group.ranks.index(src)
    if tensor.is_contiguous():
        rt.broadcast_(tensor, root)
    else:
        tensor.copy_(rt.broadcast_(tensor.contiguous(), root))
    return _finish(async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    rt = _target(group, "all_gather")
    size = rt.world.size if group is None else rt.size
    if len(tensor_list) != size:
        raise ValueError("strata.deepspeed.comm.all_gather: tensor_list has %d tensors; expected "
                         "one per rank (%d)" % (len(tensor_list), size))
    for out, row in zip(tensor_list, _rows(rt, tensor)):
        out.copy_(row.view(out.shape))
    return _finish(async_op)


def all_gather_into_tensor(output_tensor, tensor, group=None, async_op=False):
    rt = _target(group, "all_gather_into_tensor")
    output_tensor.copy_(_rows(rt, tensor).view(output_tensor.shape))
    return _finish(async_op)


def barrier(group=None, async_op=False, device_ids=None):
    _target(group, "barrier").barrier()
    return _finish(async_op)


def new_group(ranks=None, *args, **kwargs):
    """A group of `ranks` (default: every rank); collective over every rank, which must make the
    same groups in the same order (as torch.distributed.new_group)."""
    rt = _runtime("new_group")
    size, me = rt.world.size, rt.world.rank
    ranks = sorted({int(r) for r in (range(size) if ranks is None else ranks)})
    if not ranks or ranks[0] < 0 or ranks[-1] >= size:
        raise ValueError("strata.deepspeed.comm.new_group: ranks %s: expected ranks in 0-%d"
                         % (ranks, size - 1))
    member = me in ranks
    group = rt.group(0 if member else -1, ranks.index(me) if member else 0)
    return ProcessGroup(ranks, group)


def get_world_group():
    return None  # "every rank", as group=None


def destroy_process_group(group=None):
    if group is None:
        strata.shutdown()
    elif _checked(group, "destroy_process_group")._group is not None:
        group._group.close()
        group._group = None


__all__ = ["ReduceOp", "init_distributed", "is_initialized", "get_rank", "get_world_size",
           "get_local_rank", "ProcessGroup", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
           "barrier", "new_group", "get_world_group", "destroy_process_group"]
