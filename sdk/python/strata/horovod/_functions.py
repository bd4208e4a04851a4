"""Horovod's helper functions (horovod.torch.functions): broadcasting a model's parameters, an
optimizer's state and any picklable object, and gathering objects from every rank."""
import io
import pickle

import torch

from . import _state
from ._api import allgather, broadcast_, broadcast_async_, synchronize
from ._process_sets import check_process_set, global_process_set

try:  # what Horovod pickles objects with, where it is installed (lambdas, local classes)
    import cloudpickle as _pickler
except ImportError:
    _pickler = pickle


def broadcast_parameters(params, root_rank):
    """Overwrites every rank's parameters with root_rank's: a dict (model.state_dict(), in key
    order), or a list of tensors or of (name, tensor) pairs (model.named_parameters())."""
    if isinstance(params, dict):
        params = sorted(params.items())
    elif isinstance(params, list) or hasattr(params, "__iter__") and not torch.is_tensor(params):
        params = [p if isinstance(p, tuple) else (None, p) for p in params]
    else:
        raise ValueError("strata.horovod.broadcast_parameters: params of type %s; expected a dict "
                         "or a list of tensors or (name, tensor) pairs" % type(params).__name__)
    handles = [broadcast_async_(p.data if isinstance(p, torch.nn.Parameter) else p, root_rank,
                                name) for name, p in params]
    for h in handles:
        synchronize(h)


def _dumps(obj):
    buf = io.BytesIO()
    _pickler.dump(obj, buf)
    return torch.frombuffer(bytearray(buf.getvalue()), dtype=torch.uint8)


def _loads(t):
    return pickle.loads(t.numpy().tobytes())


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """root_rank's obj (pickled) on every rank."""
    check_process_set(process_set, "broadcast_object")
    # Named, so that unnamed operations elsewhere do not shift its place; one name for every
    # object, not its type's (Horovod's), since a non-root rank's obj is often None.
    name = name or "broadcast_object"
    root = _state.engine().rank == root_rank  # a global rank, in a process set too
    payload = _dumps(obj) if root else torch.empty(0, dtype=torch.uint8)
    length = torch.tensor([payload.numel()], dtype=torch.int64)
    broadcast_(length, root_rank, name=name + ".sz", process_set=process_set)
    if not root:
        payload = torch.empty(int(length[0]), dtype=torch.uint8)
    broadcast_(payload, root_rank, name=name + ".t", process_set=process_set)
    return obj if root else _loads(payload)


def allgather_object(obj, name=None):
    """Every rank's obj (pickled), as a list in rank order."""
    name = name or "allgather_object"  # as broadcast_object's
    payload = _dumps(obj)
    sizes = allgather(torch.tensor([payload.numel()], dtype=torch.int64), name=name + ".sz")
    gathered = allgather(payload, name=name + ".t")
    out, offset = [], 0
    for n in sizes.tolist():
        out.append(_loads(gathered[offset:offset + n]))
        offset += n
    return out


def broadcast_optimizer_state(optimizer, root_rank, model=None):
    """Makes every rank's optimizer state (per-parameter state and hyperparameters) root_rank's.
    An optimizer with no state yet on root gets it first from a step with zero gradients, as
    Horovod does, so that every rank starts from the same state."""
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("strata.horovod.broadcast_optimizer_state: cannot broadcast "
                         "torch.optim.LBFGS state")
    if len(optimizer.state_dict()["state"]) == 0:
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.requires_grad and p.grad is None:
                    p.grad = torch.zeros_like(p.data)
        step = getattr(optimizer, "_local_step", optimizer.step)
        step()
    state = optimizer.state_dict() if _state.engine().rank == root_rank else None
    state = broadcast_object(state, root_rank)
    optimizer.load_state_dict(state)
