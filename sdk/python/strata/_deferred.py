"""Models built on the meta device: the runtime gets their parameters without data, and each
group's values are made and written one group at a time (DeepSpeed's zero.Init), so that no rank
ever holds the whole model.

    with torch.device("meta"):            # torch >= 2.0; or pass device="meta" to each layer
        model = Net()
    opt = strata.torch.DistributedOptimizer(torch.optim.AdamW(model.parameters()), model,
                                            manifest="zero3.json", init=None)

- Before registration every meta parameter is replaced, in every module that holds it (tied ones
  stay tied), by an nn.Parameter of the same shape and dtype on the CPU that owns no memory (a
  zero-stride view of one element). It is registered without data (API 1.9).
- After finalize, group by group in definition order (the module order of named_modules(),
  which is the order of named_parameters()): its parameters get fresh CPU storage, are
  initialized, rank 0's values are broadcast, and they are written through a gather FOR_WRITE;
  partitioned ones then give their storage back. `init`: None calls the owning module's
  reset_parameters() (every parameter of such a module must be on meta); a callable is called as
  init(name, parameter) for each parameter, under torch.no_grad().
- Buffers on the meta device are refused (they have no values to write; build them on the CPU).
"""
import torch

from . import _capi
from ._partitioned import tensor_at
from ._torch_records import _numel, _trim_heap
from .runtime import StrataError


def stand_ins_for_meta(module):
    """Replaces the module's meta parameters by memory-less CPU stand-ins; returns their ids."""
    if module is None:
        return set()
    stand_in = {}  # id(meta parameter) -> its stand-in
    for mod_name, mod in module.named_modules():
        for attr, p in list(mod._parameters.items()):
            if p is None or not p.is_meta:
                continue
            q = stand_in.get(id(p))
            if q is None:
                q = torch.nn.Parameter(torch.zeros((), dtype=p.dtype).expand(p.shape),
                                       requires_grad=p.requires_grad)
                stand_in[id(p)] = q
            mod._parameters[attr] = q
        for attr, b in mod._buffers.items():
            if b is not None and b.is_meta:
                raise ValueError(
                    "strata.torch: buffer %r is on the meta device; only parameters can be "
                    "built there (their values are written after registration): build buffers "
                    "on the CPU" % ((mod_name + "." if mod_name else "") + attr))
    return {id(q) for q in stand_in.values()}


def check_init(init, deferred):
    if init is not None and not callable(init):
        raise TypeError("strata.torch.DistributedOptimizer: init: expected None or a callable "
                        "init(name, parameter), got %r" % (init,))
    if init is not None and not deferred:
        raise ValueError("strata.torch.DistributedOptimizer: init is given, but no parameter is "
                         "on the meta device (init initializes parameters built there)")


def write_deferred(opt, init):
    """Makes, initializes and writes each group's deferred parameters, one group at a time. After
    the manifest's checkpoint block resumed at finalize, the runtime holds the checkpoint's values:
    they are kept (only the placeholders are made)."""
    rt = opt.runtime
    resumed = rt.resumed() is not None
    for group in opt._groups:
        recs = [rec for rec in group.params if rec.deferred]
        if not recs:
            continue
        if not resumed:
            _write_group(rt, opt, group, recs, init)
        for rec in recs:
            if rec.partitioned:
                rec.p.data = torch.empty(0, dtype=rec.p.dtype)  # _partition's placeholder next
            rec.copied_version = -1  # bridged: the module's copy is refreshed at its next gather
        _trim_heap()


def _write_group(rt, opt, group, recs, init):
    """Initializes one group's deferred parameters (rank 0's values) and writes them in."""
    with torch.no_grad():
        for rec in recs:
            # Kept whole: p.data is the runtime's buffer already (bridged: its fp32 copy).
            if rec.partitioned:
                rec.p.data = torch.empty(rec.shape, dtype=rec.p.dtype)
        _initialize(group, recs, init)
        for rec in recs:
            rt.broadcast_(rec.p.data)  # rank 0's values, as for a model built whole
    rt.gather(group.id, for_write=True)
    try:
        for rec in recs:
            view = rt.view(rec.index)
            if view.data is None:
                raise StrataError(_capi.ERR_INTERNAL, "strata.torch: the runtime gave no "
                                  "data for %r while gathered for write" % rec.name)
            dst = tensor_at(view.data, _numel(rec.shape), opt._model_dtype, rec.shape)
            if dst.data_ptr() != rec.p.data.data_ptr():
                dst.copy_(rec.p.data)  # rounds to f16/bf16 where bridged
    finally:
        rt.release(group.id)


def _initialize(group, recs, init):
    if init is not None:
        for rec in recs:
            init(rec.name, rec.p)
        return
    for module in group.owners:  # the owner, or the modules under a leaf that hold parameters
        if not hasattr(module, "reset_parameters"):
            raise ValueError("strata.torch: module %s owns parameters built on the meta device "
                             "(%s) but has no reset_parameters(); pass init=callable(name, "
                             "parameter) to DistributedOptimizer"
                             % (type(module).__name__, recs[0].name))
    if len(recs) != len(group.params):
        raise ValueError("strata.torch: module %s owns parameters on the meta device and others "
                         "not (%s); its reset_parameters() would overwrite the others: pass "
                         "init=callable(name, parameter) to DistributedOptimizer"
                         % (type(group.module).__name__, recs[0].name))
    for module in group.owners:
        module.reset_parameters()
