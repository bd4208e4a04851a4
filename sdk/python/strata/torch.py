"""strata.torch: train a PyTorch model through the Strata runtime.

    model = Net()
    opt = strata.torch.DistributedOptimizer(torch.optim.AdamW(model.parameters(), lr=1e-3),
                                            model, manifest="manifest.json")
    for x, y in batches:                    # this rank's micro-batches
        loss = F.cross_entropy(model(x), y)
        opt.scale_loss(loss).backward()     # gradients go to the runtime as backward makes them
        opt.step()                          # after every micro-batch, like strata_step

What runs the optimizer step, how gradients are reduced, which ZeRO stage, which number format and
where the optimizer state lives come from the manifest; the script does not change with them.

How the module's parameters meet the runtime (docs/DESIGN.md, "Python hosts"):
- Every trainable parameter is registered with the runtime in the manifest's model dtype. An fp32
  parameter under an fp16/bf16 manifest is bridged, as the C++ example does: the runtime holds the
  f16/bf16 values, the module computes in fp32 with those values widened, and the fp32 gradient is
  rounded into the runtime's f16/bf16 gradient buffer. (torch's CPU matmul has no fp16.)
- Given the nn.Module, each submodule that owns parameters becomes a parameter group, and every
  submodule that uses parameters directly (its own, or tied ones another owns) gathers their
  groups around its forward (pre-hook) and releases them after (forward hook); nested and
  repeated uses are counted, so a group is gathered once while any use is running. Where the
  runtime does not use the module's own memory (f16/bf16 bridges) its values are copied in.
- ZeRO stage 3 (the runtime partitions a group's parameters): between uses such a parameter's
  `data` is an empty placeholder, and inside its module's forward and backward a tensor over the
  runtime's gathered buffer (no copy; bridged ones a widened copy). What autograd saves for
  backward is a handle, not the buffer (saved-tensor hooks, _partitioned.py); a pre-backward
  function on the module's outputs gathers the group again before its backward nodes run; the
  runtime prefetches the next groups of the recorded order. A placeholder used anywhere else
  (another module's forward, model.state_dict(), arithmetic outside a forward) raises an error
  naming the parameter; opt.gathered() and opt.module_state_dict() give whole values. The
  module's full copies are freed at construction, so a rank holds its partitions only.
- In backward a group is gathered for backward by whichever comes first: its pre-backward
  function, a saved tensor's unpacking, or its first gradient. Each gradient is added into the
  runtime's buffer as autograd finishes it (an AccumulateGrad hook), and when the group's last
  one arrives its parameters are marked ready (their reduction overlaps the rest of backward)
  and the group is released.
- Memory at stage 3: backward frees activations into glibc's heap, which keeps them, while the
  runtime's gradient partition takes pages as backward delivers its slices; so the heap is given
  back to the system twice in each backward (after a third and two thirds of the partitioned
  elements) and after each applied step. The peak then holds about a third of the partition
  beside the activations, not all of it (bench/transformer/README.md has the figures).
- A model built on the meta device (`with torch.device("meta")`, or device="meta" per layer)
  never exists whole: its parameters are registered without data and each group's values are
  made, initialized (`init`), broadcast from rank 0 and written one group at a time, as
  deepspeed.zero.Init does (_deferred.py). ZeRO stage 3 only.
- Given only named_parameters, no groups are defined: gradients go to host-owned buffers the
  runtime reads. That serves ZeRO stages 0-2; stage 3 needs the module.
- Before each step the ranks agree on which parameters received a gradient in the micro-batch (one
  small allreduce): a rank whose backward skipped a parameter the others reached ends every rank
  with an error naming the parameter and the ranks, rather than a silent divergence or a hang.
"""
import collections
import contextlib
import ctypes

import torch

import strata
from . import _capi
from ._deferred import check_init, stand_ins_for_meta, write_deferred
from ._partitioned import PartitionedParameter, SavedTensorHooks, tensor_at, wrap_outputs
from ._torch_optimizer import _first_few, _merge, optimizer_overrides  # noqa: F401 (public)
from ._torch_records import _TORCH_CODE, _TORCH_DTYPE, _Group, _numel, _Param, _trim_heap
from .runtime import StrataError

# How often stage 3's backward gives glibc's heap back (see the module's text): with two trims
# the 114 M-parameter bench's peak went from ~1320 to ~1250 MiB at 4 ranks, at no tokens/s we
# could tell from the VM's noise; each trim costs the page faults of what it returned.
_BACKWARD_TRIMS = 2


class DistributedOptimizer:
    """Registers the model's parameters with the runtime and drives it from autograd hooks.

    optimizer: a torch.optim.Adam/AdamW/SGD whose algorithm and hyperparameters the runtime runs
        (they override the manifest's "optimizer"; its lr is followed on every step, so torch LR
        schedulers work), or None for the manifest's optimizer.
    model: the nn.Module (every ZeRO stage), or an iterable of (name, parameter) (stages 0-2).
    manifest, overrides: as strata.init; used when no runtime exists yet in this process. With one
        already created by strata.init, an optimizer must be None (its settings are fixed).
    init: for a model built on the meta device (ZeRO stage 3; _deferred.py): None calls each
        owning module's reset_parameters(), or a callable init(name, parameter) fills each
        parameter; either way one group at a time, so no rank holds the whole model.
    leaf_modules: nn.Module classes whose instances are gathered as one unit (DeepSpeed's
        deepspeed.utils.set_z3_leaf_modules; a module with `_z3_leaf = True` is one too): a
        single group for all the parameters of its subtree, gathered around its forward, and no
        hooks on its descendants. Fewer, larger gathers: on a transformer, leaf_modules=[Block]
        makes two collective calls per block and pass instead of a dozen, at the cost of
        holding a whole block gathered at a time.

    Construction is collective: every rank registers the same parameters, rank 0's initial values
    are broadcast into every rank's module. Used by the training thread only.
    """

    def __init__(self, optimizer, model, manifest=None, overrides=None, init=None,
                 leaf_modules=None):
        self.optimizer = optimizer
        self._leaf_classes = tuple(leaf_modules or ())
        for cls in self._leaf_classes:
            if not (isinstance(cls, type) and issubclass(cls, torch.nn.Module)):
                raise TypeError("strata.torch.DistributedOptimizer: leaf_modules: expected "
                                "nn.Module classes, got %r" % (cls,))
        self.module = model if isinstance(model, torch.nn.Module) else None
        deferred = stand_ins_for_meta(self.module)  # parameters built on the meta device
        check_init(init, deferred)
        named = list(model.named_parameters() if self.module is not None else model)
        for item in named:
            if not (isinstance(item, tuple) and len(item) == 2 and
                    isinstance(item[1], torch.Tensor)):
                raise TypeError("strata.torch.DistributedOptimizer: model: expected an nn.Module or "
                                "(name, parameter) pairs, got an item %r" % (item,))
        self._params = [_Param(name, p) for name, p in named if p.requires_grad]
        if not self._params:
            raise ValueError("strata.torch.DistributedOptimizer: no trainable parameters")
        for rec in self._params:
            rec.deferred = id(rec.p) in deferred
        for name, p in named:
            if p.is_meta and self.module is None:
                raise ValueError("strata.torch.DistributedOptimizer: parameter %r is on the meta "
                                 "device: pass the nn.Module (its groups are written one at a "
                                 "time), not named parameters" % name)
            if id(p) in deferred and not p.requires_grad:
                raise ValueError("strata.torch.DistributedOptimizer: parameter %r is on the meta "
                                 "device and frozen (requires_grad False); the runtime writes "
                                 "only trainable ones: build it on the CPU" % name)
        patch = None
        if optimizer is not None:
            patch = optimizer_overrides(optimizer)
            self._torch_lr = optimizer.param_groups[0]["lr"]
        if strata.is_initialized():
            if optimizer is not None:
                raise ValueError(
                    "strata.torch.DistributedOptimizer: strata.init already created the runtime, "
                    "so the torch optimizer's settings cannot reach it; pass optimizer=None (the "
                    "manifest's optimizer), or strata.init(manifest, overrides="
                    "strata.torch.optimizer_overrides(optimizer))")
            self.runtime = strata.runtime()
        else:
            if isinstance(overrides, str):
                import json
                overrides = json.loads(overrides)
            if patch is not None:
                overrides = _merge(overrides or {}, patch)
            self.runtime = strata.init(manifest, overrides)
        self.world = self.runtime.world
        self.training = self.runtime.training
        self._accumulation = float(self.training.gradient_accumulation_steps)
        self._version = 0  # bumped whenever the runtime's parameter values change
        self._micro_steps = 0
        self._partitioned_elements = 0  # stage 3: what _trim_in_backward counts towards
        self._closed_elements = self._trims_done = 0  # ... and its count in this micro-batch
        self._hooks = []
        self._groups = []
        self._saved_hooks = None  # stage 3: SavedTensorHooks, when some parameter is partitioned
        self._scopes = []         # saved-tensor hook scopes of the forwards running now
        self._flags = (ctypes.c_int32 * (2 * len(self._params)))()
        self._register(init)

    # ---- setup ----------------------------------------------------------------------------------
    def _register(self, init):
        rt = self.runtime
        model_dtype = self._model_dtype = _TORCH_DTYPE.get(self.training.model_dtype)
        if model_dtype is None:
            raise ValueError("strata.torch: the manifest's precision wants parameters in %s; "
                             "strata.torch handles f32, f16, bf16" % self.training.model_dtype)
        grouped = self.module is not None
        for rec in self._params:
            p = rec.p
            if p.device.type != "cpu" or not (p.is_contiguous() or rec.deferred):
                raise ValueError("strata.torch: parameter %r: expected a contiguous CPU tensor"
                                 % rec.name)
            if p.dtype != model_dtype and not (p.dtype == torch.float32 and
                                               model_dtype != torch.float32):
                raise ValueError("strata.torch: parameter %r is %s; the manifest's model dtype is "
                                 "%s" % (rec.name, p.dtype, self.training.model_dtype))
            rec.bridge = p.dtype != model_dtype  # an fp32 module under an f16/bf16 manifest
            if rec.deferred:  # built on meta (module only): registered without data
                rec.index = rt.register_param_raw(rec.name, _TORCH_CODE[model_dtype], None, None,
                                                  _numel(rec.shape))
                continue
            rec.store = p.data.to(model_dtype) if rec.bridge else p.data
            grad = None
            if not grouped:
                # Host-owned gradient buffers; an fp32 parameter's is p.grad itself, so autograd
                # accumulates straight into what the runtime reduces.
                rec.store_grad = torch.zeros_like(rec.store)
                if not rec.bridge:
                    p.grad = rec.store_grad
                grad = rec.store_grad
            rec.index = rt.register_param(rec.name, rec.store, grad)
        if grouped:
            self._define_groups()
        rt.finalize()
        for rec in self._params:
            view = rt.view(rec.index)
            rec.partitioned = grouped and view.data is None
            if rec.deferred and not rec.partitioned:
                # Kept whole (the persistence threshold) in a buffer of the runtime's, which
                # the module uses in place (a bridged one: a widened copy, made at its write).
                rec.store = tensor_at(view.data, _numel(rec.shape), model_dtype, rec.shape)
                rec.p.data = (torch.empty(rec.shape, dtype=rec.p.dtype) if rec.bridge
                              else rec.store)
            rec.resident = (not rec.bridge and rec.store is not None and
                            view.data == rec.store.data_ptr())
            if not grouped and view.data != rec.store.data_ptr():
                raise ValueError(
                    "strata.torch: the sharding stratum partitions parameter %r (ZeRO stage 3): "
                    "pass the nn.Module to DistributedOptimizer, which gathers each module's "
                    "parameters around its forward" % rec.name)
        self._install_hooks()
        write_deferred(self, init)  # built on meta: made, initialized and written group by group
        self._partition()
        self.sync_module()  # rank 0's values, broadcast by finalize, into every module

    def _define_groups(self):
        """One runtime group per module that owns parameters, or per leaf module (leaf_modules:
        all the parameters of its subtree, one unit, as DeepSpeed's z3 leaf modules; its
        descendants get no group and no hooks). Every module that uses parameters directly (its
        own, or tied ones another module owns; a leaf: its subtree's) gathers their groups
        around its forward."""
        leaves = {id(m) for m in self.module.modules() if self._is_leaf(m)}
        inside = set()  # modules under a leaf
        for mod in self.module.modules():
            if id(mod) in leaves and id(mod) not in inside:
                inside.update(id(d) for d in mod.modules() if d is not mod)
        units = [(name, mod) for name, mod in self.module.named_modules() if id(mod) not in inside]
        by_param = {id(rec.p): rec for rec in self._params}
        owner = {}
        for name, mod in units:
            leaf = id(mod) in leaves
            members = [by_param.pop(id(p)) for p in mod.parameters(recurse=leaf)
                       if id(p) in by_param]
            if not members:
                continue
            gid = self.runtime.define_group(name or "model", [rec.index for rec in members])
            ids = {id(rec.p) for rec in members}
            owners = [mod]  # a leaf: the modules under it that hold its parameters
            if leaf:
                owners = [m for m in mod.modules()
                          if any(id(p) in ids for p in m._parameters.values())]
            group = _Group(gid, members, mod, owners)
            for rec in members:
                rec.group = group
                owner[id(rec.p)] = group
            self._groups.append(group)
        recs = {id(rec.p): rec for rec in self._params}
        for _, mod in units:
            used, held = [], []
            holders = mod.modules() if id(mod) in leaves else (mod,)
            for holder in holders:
                for attr, p in holder._parameters.items():
                    group = owner.get(id(p))
                    if group is None:
                        continue
                    held.append((holder, attr, recs[id(p)]))
                    if group not in used:
                        used.append(group)
            if used:
                self._hooks.append(mod.register_forward_pre_hook(
                    self._make_pre_forward(used, held)))
                self._hooks.append(mod.register_forward_hook(self._make_post_forward(used)))

    def _is_leaf(self, module):
        return (module is not self.module and
                (isinstance(module, self._leaf_classes) or getattr(module, "_z3_leaf", False)))

    def _install_hooks(self):
        for rec in self._params:
            fn = self._make_grad_hook(rec)
            p = rec.p
            if hasattr(p, "register_post_accumulate_grad_hook"):  # torch >= 2.1
                self._hooks.append(p.register_post_accumulate_grad_hook(lambda _p, fn=fn: fn()))
            else:
                # Horovod's way on older torch: a hook on the parameter's AccumulateGrad node runs
                # after the gradient was accumulated into p.grad. The node must be kept alive (it
                # also keeps the parameter's whole shape, which a placeholder's data lacks).
                node = p.expand_as(p).grad_fn.next_functions[0][0]
                self._hooks.append((node, node.register_hook(lambda *unused, fn=fn: fn())))

    def _partition(self):
        """Stage 3: the module's partitioned parameters become placeholders, and the values the
        module and this object registered are freed (the runtime holds the rank's slice)."""
        if not any(rec.partitioned for rec in self._params):
            return
        self._saved_hooks = SavedTensorHooks(self)
        self._partitioned_elements = sum(_numel(rec.shape) for rec in self._params
                                         if rec.partitioned)
        for rec in self._params:
            if not rec.partitioned:
                continue
            p = rec.p
            rec.placeholder = torch.empty(0, dtype=p.dtype)
            p.data = rec.placeholder
            p.__class__ = PartitionedParameter
            p._strata_rec = rec
            self.runtime.forget_data(rec.index)
            rec.store = None
        _trim_heap()

    # ---- forward: gather around each module ----------------------------------------------------
    def _make_pre_forward(self, groups, held):
        def pre_forward(module, inputs):
            if module is self.module and self._scopes:
                self._unwind()  # a forward that raised left its scopes open
            self._check_unchanged(held)
            for group in groups:
                self._acquire(group)
            if self._saved_hooks is not None:
                self._scopes.append(self._saved_hooks.push())
        return pre_forward

    def _make_post_forward(self, groups):
        def post_forward(module, inputs, output):
            if self._saved_hooks is not None and self._scopes:
                self._scopes.pop().__exit__(None, None, None)
            for group in groups:
                self._drop(group)
            if self._saved_hooks is not None and torch.is_grad_enabled():
                return wrap_outputs(output, self, groups)
            return None
        return post_forward

    def _check_unchanged(self, held):
        """The runtime trains the tensors registered at construction: a parameter the script
        replaced (module.weight = nn.Parameter(...)) or whose data it replaced or reshaped since
        would silently stop training, so each forward checks its module's (a few attribute
        reads; a leaf module: its subtree's)."""
        for module, attr, rec in held:
            p = module._parameters.get(attr)
            if p is not rec.p:
                raise self._changed(rec, "was replaced by another tensor (%s.%s)" % (
                    type(module).__name__, attr))
            if rec.partitioned:
                if (p.numel() != 0 if rec.live is None else p.data_ptr() != rec.live.data_ptr()):
                    raise self._changed(rec, "had its data replaced")
            elif p.shape != rec.shape:
                raise self._changed(rec, "changed shape from %s to %s" % (
                    tuple(rec.shape), tuple(p.shape)))
            elif rec.resident and p.data_ptr() != rec.store.data_ptr():
                raise self._changed(rec, "had its data replaced")

    @staticmethod
    def _changed(rec, what):
        return StrataError(_capi.ERR_INVALID_ARGUMENT, "strata.torch: parameter %r %s after "
                           "DistributedOptimizer registered it; the runtime trains the tensors "
                           "registered at construction: finish building (and loading) the model "
                           "before creating the optimizer" % (rec.name, what))

    def _unwind(self):
        while self._scopes:
            self._scopes.pop().__exit__(None, None, None)

    def _acquire(self, group):
        if not group.gathered:
            self.runtime.gather(group.id)
            self._attach(group)
        group.refs += 1

    def _drop(self, group):
        group.refs -= 1
        if not group.gathered:
            self.runtime.release(group.id)
            self._detach(group)

    def _attach(self, group):
        """The gathered group's values into the module: partitioned parameters point at the
        runtime's buffer (bridged ones at a widened copy of it); others are copied in when the
        runtime's values changed since."""
        for rec in group.params:
            if rec.partitioned:
                view = self.runtime.view(rec.index)
                if view.data is None:
                    raise StrataError(_capi.ERR_INTERNAL, "strata.torch: the runtime gave no data "
                                      "for %r while gathered" % rec.name)
                # The runtime's values are in the model dtype (a module already in f16/bf16
                # is not bridged); a bridged fp32 module computes with them widened.
                t = tensor_at(view.data, _numel(rec.shape), self._model_dtype, rec.shape)
                if rec.bridge:
                    t = t.float()
                rec.live = t
                rec.p.data = t
                self._saved_hooks.live[t.data_ptr()] = rec
            elif not rec.resident and rec.copied_version != self._version:
                self._copy_in(rec)

    def _detach(self, group):
        for rec in group.params:
            if rec.partitioned and rec.live is not None:
                self._saved_hooks.live.pop(rec.live.data_ptr(), None)
                rec.live = None
                rec.p.data = rec.placeholder

    def _copy_in(self, rec):
        """The runtime's current values into the module's tensor (widened if bridged). Only while
        rec's group is gathered (or always readable)."""
        view = self.runtime.view(rec.index)
        if view.data is None:
            raise StrataError(_capi.ERR_INTERNAL, "strata.torch: the runtime gave no data for %r "
                              "while gathered" % rec.name)
        rec.p.data.copy_(rec.view_tensor(view.data, self._model_dtype))  # .data: no autograd
        rec.copied_version = self._version

    # ---- backward: gradients into the runtime as autograd makes them ---------------------------
    def _make_grad_hook(self, rec):
        if rec.group is None:
            return lambda: self._flat_grad(rec)
        return lambda: self._group_grad(rec)

    def _second_gradient(self, rec):
        return StrataError(_capi.ERR_INVALID_ARGUMENT, "strata.torch: parameter %r received a second gradient in micro-step "
                           "%d after it was handed to the runtime; call opt.step() after every "
                           "backward" % (rec.name, self._micro_steps))

    def _flat_grad(self, rec):
        if rec.arrived:
            raise self._second_gradient(rec)
        p = rec.p
        g = p.grad
        if g is not rec.store_grad:  # bridged, or the script replaced or dropped p.grad
            if g is not None:
                rec.store_grad.add_(g)  # hooks run with gradient recording off
            p.grad = None if rec.bridge else rec.store_grad
        rec.arrived = True
        self.runtime.grad_ready(rec.index)

    def _open_backward(self, group):
        """Gathers `group` for backward (once per micro-batch): its values for the backward
        nodes that read them, and the runtime's gradient buffers lent for its gradients. Called by
        whichever comes first: the module's pre-backward function, a saved tensor's unpacking,
        or the group's first gradient."""
        if group.backward_open:
            return
        rt = self.runtime
        if group.refs > 0:  # gathered for a forward still running: gather it again for backward
            rt.release(group.id)
            self._detach(group)
        rt.gather(group.id, for_backward=True)
        group.backward_open = True
        self._attach(group)
        group.pending = len(group.params)
        group.grads = {}
        for member in group.params:
            view = rt.view(member.index)
            if view.grad is None:
                raise StrataError(_capi.ERR_INTERNAL, "strata.torch: the runtime lent no "
                                  "gradient buffer for %r" % member.name)
            group.grads[member.index] = member.view_tensor(view.grad, self._model_dtype)

    def _group_grad(self, rec):
        if rec.arrived:
            raise self._second_gradient(rec)
        group = rec.group
        if not group.backward_open:
            self._open_backward(group)
        g = rec.p.grad
        if g is not None:
            # Autograd runs hooks with gradient recording off, and neither tensor requires grad.
            group.grads[rec.index].add_(g)  # rounds to f16/bf16 when bridged
            rec.p.grad = None
        rec.arrived = True
        group.pending -= 1
        if group.pending == 0:
            self._close_group(group)

    def _close_group(self, group):
        if self._saved_hooks is not None:
            self._trim_in_backward(group)
        for member in group.params:
            self.runtime.grad_ready(member.index)
        group.backward_open = False
        group.grads = None
        self.runtime.release(group.id)
        self._detach(group)
        if group.refs > 0:  # a forward still uses it: gathered again for that forward
            self.runtime.gather(group.id)
            self._attach(group)

    def _trim_in_backward(self, group):
        """Gives the heap back each time backward's closed groups pass another 1/(_BACKWARD_TRIMS
        + 1) of the partitioned elements: the activations freed so far leave the process before
        the gradient partition's pages for the rest of backward arrive."""
        self._closed_elements += sum(_numel(rec.shape) for rec in group.params if rec.partitioned)
        due = min(_BACKWARD_TRIMS,
                  self._closed_elements * (_BACKWARD_TRIMS + 1) // self._partitioned_elements)
        if due > self._trims_done:
            self._trims_done = due
            _trim_heap()

    # ---- the step ------------------------------------------------------------------------------
    def scale_loss(self, loss):
        """loss × the loss scale (fp16's dynamic scale, else 1) ÷ gradient_accumulation_steps,
        as DeepSpeed's engine.backward scales it."""
        return loss * (self.runtime.loss_scale / self._accumulation)

    @property
    def loss_scale(self):
        return self.runtime.loss_scale

    def zero_grad(self, set_to_none=True):
        """Nothing to do: the runtime zeroes its gradient buffers after every optimizer step, and
        gradients of a micro-batch that is not a boundary must be kept. (Kept for scripts written
        for torch optimizers.)"""

    def step(self):
        """strata_step after a micro-batch's backward (collective); returns strata.StepResult."""
        rt = self.runtime
        # A group this rank opened but whose gradients did not all arrive is released now, so that
        # the collective sequence stays the others'; the agreement below then names what is missing.
        for group in self._groups:
            if group.backward_open:
                self._close_group(group)
        self._closed_elements = self._trims_done = 0  # _trim_in_backward's count, per micro-batch
        self._agree_on_gradients()
        if self.optimizer is not None:
            lr = self.optimizer.param_groups[0]["lr"]
            if lr != self._torch_lr:  # a torch LR scheduler moved it
                rt.set_lr(lr)
                self._torch_lr = lr
        result = rt.step()
        self._micro_steps += 1
        for rec in self._params:
            rec.arrived = False
        if result.outcome == "applied":
            self._version += 1
            if self.module is None:
                self.sync_module()  # without forward hooks, bridged values are copied here
            if self._saved_hooks is not None:
                # Stage 3: what backward allocated and freed (whole gradients, gathered copies)
                # leaves the process, so that between steps its RSS is its partitions.
                _trim_heap()
        return result

    def _agree_on_gradients(self):
        """One allreduce (max of [arrived, -arrived]) tells every rank whether all ranks' backward
        reached the same parameters this micro-batch; if not, every rank raises naming them."""
        n = len(self._params)
        flags = self._flags  # ctypes int32[2n]: cheaper per step than a tensor's item writes
        for i, rec in enumerate(self._params):
            flags[i] = int(rec.arrived)
            flags[n + i] = -int(rec.arrived)
        try:
            self.runtime.allreduce_address(ctypes.addressof(flags), 2 * n, _capi.I32, "max")
        except StrataError as e:
            # Usually another rank is already reducing the gradient this rank lacks, so the comm
            # stratum saw two different collectives; say what this rank is missing.
            missing = [rec.name for rec in self._params if not rec.arrived]
            if not missing:
                raise
            raise StrataError(e.code, "strata.torch: this rank's backward produced no gradient "
                              "for %s in micro-step %d (counting from 0), and the ranks' "
                              "collectives then differed: %s"
                              % (_first_few([repr(m) for m in missing], ", "), self._micro_steps,
                                 e)) from e
        if all(flags[i] == -flags[n + i] for i in range(n)):
            return
        mine = torch.tensor([1 if rec.arrived else 0 for rec in self._params], dtype=torch.int32)
        every = self.runtime.allgather(mine.view(1, n))  # world × n
        lines = []
        for i, rec in enumerate(self._params):
            column = every[:, i].tolist()
            if min(column) != max(column):
                have = [r for r, v in enumerate(column) if v]
                lack = [r for r, v in enumerate(column) if not v]
                lines.append("%r: ranks %s produced a gradient, ranks %s did not" % (
                    rec.name, ",".join(map(str, have)), ",".join(map(str, lack))))
        raise StrataError(_capi.ERR_MISMATCH, "strata.torch: in micro-step %d (counting from 0) "
                          "the ranks' backward passes reached different parameters (every rank must "
                          "produce a gradient for the same parameters, or none): %s"
                          % (self._micro_steps, _first_few(lines, "; ")))

    # ---- parameters back into the module, checkpoints ------------------------------------------
    def sync_module(self):
        """Copies the runtime's current parameter values into the module's tensors (collective in
        grouped mode: gathers every group in turn). Needed before reading parameters outside a
        forward with f16/bf16 at stages 0-2; harmless otherwise. Parameters ZeRO stage 3
        partitions have no values in the module between uses: read them inside
        `with opt.gathered():` or through module_state_dict()."""
        if self.module is None:
            for rec in self._params:
                if rec.bridge:
                    rec.p.data.copy_(rec.store)
            return
        for group in self._groups:
            if all(rec.resident or rec.partitioned for rec in group.params):
                continue
            with self._gathering([group]):
                pass

    @contextlib.contextmanager
    def _gathering(self, groups):
        for group in groups:
            self._acquire(group)
        try:
            yield
        finally:
            for group in groups:
                self._drop(group)

    def gathered(self):
        """A context in which every parameter of the module is whole and current, as DeepSpeed's
        zero.GatheredParameters: at ZeRO stage 3 it gathers every group (the whole model in
        memory) and releases them on exit. Collective: every rank enters and leaves it alike.
        Changes made to parameters inside it are not kept (the runtime's values are)."""
        if self.module is None:
            return contextlib.nullcontext()
        return self._gathering(self._groups)

    def module_state_dict(self):
        """The module's state_dict with every parameter whole: a copy of the runtime's current
        values (in the module's dtype), and the module's buffers. Collective."""
        if self.module is None:
            self.sync_module()
            return collections.OrderedDict((k, v.detach().clone()) for k, v in
                                           self._named_for_state())
        with self.gathered():
            return collections.OrderedDict(
                (name, t.detach().clone())
                for name, t in self.module.state_dict(keep_vars=True).items())

    def _named_for_state(self):
        return [(rec.name, rec.p) for rec in self._params]

    def save(self, dir, tag=None, extra=None, blocking=True):
        """A checkpoint of the runtime's state (strata_save; collective, after a boundary step)."""
        self.runtime.save(dir, tag, extra, blocking)

    def set_host_state(self, state):
        """The host state (a dict) the manifest's checkpoint block keeps with its next save."""
        self.runtime.set_host_state(state)

    def join(self):
        """This rank has no more data (the manifest's "join": true): it takes part in the other
        ranks' micro-batches with zero gradients until every rank has called join(), as Horovod's
        hvd.join(). Call it after the step() of this rank's last micro-batch. Returns how many of
        the others' micro-batches it took part in; the module then holds the parameters every
        rank holds."""
        mirrored = self.runtime.join()
        self._micro_steps += mirrored
        if mirrored:
            self._version += 1
            if self.module is None:
                self.sync_module()
        return mirrored

    def resumed(self):
        """What the manifest's checkpoint block loaded at finalize (None: nothing). The module
        already holds the loaded values."""
        return self.runtime.resumed()

    def load(self, dir, tag=None):
        """Loads a checkpoint (any world size, stage, precision) and copies it into the module."""
        result = self.runtime.load(dir, tag)
        self._version += 1
        self.sync_module()  # partitioned parameters read the runtime's values at their next gather
        return result

    def close(self, materialize=True):
        """Removes the hooks and destroys the runtime (collective). With materialize, parameters
        ZeRO stage 3 partitioned become ordinary whole tensors again (the model in memory, as
        before training); without, they stay placeholders that refuse every use."""
        self._unwind()
        if materialize and self._saved_hooks is not None:
            # One group at a time: beside the copies, at most one group is gathered.
            for group in self._groups:
                with self._gathering([group]):
                    for rec in group.params:
                        if rec.partitioned:
                            rec.placeholder = rec.live.clone()
            for rec in self._params:
                if rec.partitioned:
                    rec.p.data = rec.placeholder
                    rec.p.__class__ = torch.nn.Parameter
                    del rec.p._strata_rec
        for hook in self._hooks:
            (hook[1] if isinstance(hook, tuple) else hook).remove()
        self._hooks = []
        strata.shutdown()
