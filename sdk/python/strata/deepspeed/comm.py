"""deepspeed.comm's common functions on the Strata runtime (collective, blocking, on CPU tensors,
over every rank). The runtime starts in deepspeed.initialize, with the ds_config: rank and world
size are known before (from the launcher's environment), collectives only after.

Sub-groups (group=, new_group) are not provided yet: each raises NotImplementedError."""
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


def get_rank(group=None):
    _no_group(group, "get_rank")
    return strata.rank() if strata.is_initialized() else _env_world()[0]


def get_world_size(group=None):
    _no_group(group, "get_world_size")
    return strata.size() if strata.is_initialized() else _env_world()[1]


def get_local_rank():
    if strata.is_initialized():
        return strata.local_rank()
    for key in ("OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK", "SLURM_LOCALID"):
        if key in os.environ:
            return int(os.environ[key])
    return 0


def _no_group(group, what):
    if group is not None:
        raise NotImplementedError("strata.deepspeed.comm.%s: group=: sub-groups of ranks are not "
                                  "provided yet; collectives run over every rank" % what)


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
    name = op if isinstance(op, str) else getattr(op, "name", str(op)).lower()
    name = {"sum": "sum", "avg": "avg", "min": "min", "max": "max", "product": "product",
            "reduceop.sum": "sum", "reduceop.avg": "avg", "reduceop.min": "min",
            "reduceop.max": "max", "reduceop.product": "product"}.get(name.lower(), name.lower())
    return name


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """In place on `tensor` over every rank."""
    _no_group(group, "all_reduce")
    rt = _runtime("all_reduce")
    name = _op_name(op)
    if name == "product":
        every = rt.allgather(tensor.detach().contiguous().view(1, -1))
        tensor.copy_(every.prod(dim=0).view(tensor.shape))
        return _finish(async_op)
    if name not in ("sum", "avg", "min", "max"):
        raise ValueError("strata.deepspeed.comm.all_reduce: op %r; expected ReduceOp.SUM, AVG, MIN, "
                         "MAX or PRODUCT" % (op,))
    if tensor.is_contiguous():
        rt.allreduce_(tensor, name)
    else:
        tensor.copy_(rt.allreduce(tensor.contiguous(), name))
    return _finish(async_op)


def broadcast(tensor, src, group=None, async_op=False):
    _no_group(group, "broadcast")
    rt = _runtime("broadcast")
    if tensor.is_contiguous():
        rt.broadcast_(tensor, src)
    else:
        tensor.copy_(rt.broadcast(tensor.contiguous(), src))
    return _finish(async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    _no_group(group, "all_gather")
    rt = _runtime("all_gather")
    if len(tensor_list) != rt.world.size:
        raise ValueError("strata.deepspeed.comm.all_gather: tensor_list has %d tensors; expected "
                         "one per rank (%d)" % (len(tensor_list), rt.world.size))
    every = rt.allgather(tensor.detach().contiguous().view(1, -1))
    for out, row in zip(tensor_list, every):
        out.copy_(row.view(out.shape))
    return _finish(async_op)


def all_gather_into_tensor(output_tensor, tensor, group=None, async_op=False):
    _no_group(group, "all_gather_into_tensor")
    rt = _runtime("all_gather_into_tensor")
    every = rt.allgather(tensor.detach().contiguous().view(1, -1))
    output_tensor.copy_(every.view(output_tensor.shape))
    return _finish(async_op)


def barrier(group=None, async_op=False, device_ids=None):
    _no_group(group, "barrier")
    _runtime("barrier").barrier()
    return _finish(async_op)


def new_group(ranks=None, *args, **kwargs):
    raise NotImplementedError("strata.deepspeed.comm.new_group: sub-groups of ranks are not "
                              "provided yet; collectives run over every rank")


def get_world_group():
    return None  # "every rank", as group=None


def destroy_process_group(group=None):
    _no_group(group, "destroy_process_group")
    strata.shutdown()


__all__ = ["ReduceOp", "init_distributed", "is_initialized", "get_rank", "get_world_size",
           "get_local_rank", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor",
           "barrier", "new_group", "get_world_group", "destroy_process_group"]
