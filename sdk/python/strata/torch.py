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
- Given the nn.Module, each submodule that owns parameters becomes a parameter group: a forward
  pre-hook gathers it (and copies the runtime's values into the module where the runtime does not
  use the module's own memory: ZeRO stage 3 partitions, f16/bf16 bridges), a forward hook releases
  it. In backward, the first of a group's gradients gathers the group for backward; each gradient
  is added into the runtime's buffer as autograd finishes it (an AccumulateGrad hook), and when the
  group's last one arrives its parameters are marked ready (their reduction overlaps the rest of
  backward) and the group is released.
- Given only named_parameters, no groups are defined: gradients go to host-owned buffers the
  runtime reads. That serves ZeRO stages 0-2; stage 3 needs the module.
- Before each step the ranks agree on which parameters received a gradient in the micro-batch (one
  small allreduce): a rank whose backward skipped a parameter the others reached ends every rank
  with an error naming the parameter and the ranks, rather than a silent divergence or a hang.
"""
import ctypes
import math

import torch

import strata
from . import _capi
from .runtime import StrataError

_TORCH_DTYPE = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}

# Every key a manifest's optimizer params may hold for the optimizers translated below: a torch
# optimizer replaces the manifest's block, and a JSON merge patch can only replace keys one by one
# (null deletes), so the ones the new block does not set are deleted.
_OPTIMIZER_KEYS = ("lr", "betas", "eps", "weight_decay", "momentum", "dampening", "nesterov",
                   "adam_w_mode", "bias_correction")


def optimizer_overrides(optimizer):
    """The manifest merge patch that makes the runtime run `optimizer`'s algorithm and
    hyperparameters: {"optimizer": {"type": ..., "params": {...}}}. torch.optim.Adam, AdamW and
    SGD; anything else, or per-group hyperparameters that differ, raises ValueError naming it."""
    kind = type(optimizer).__name__
    if kind in ("Adam", "AdamW"):
        keys = ("lr", "betas", "eps", "weight_decay")
        refused = {"amsgrad": False, "maximize": False}
    elif kind == "SGD":
        keys = ("lr", "momentum", "dampening", "weight_decay", "nesterov")
        refused = {"maximize": False}
    else:
        raise ValueError("strata.torch: optimizer %s is not one the runtime runs (torch.optim.Adam, "
                         "AdamW, SGD); pass optimizer=None and set the manifest's \"optimizer\" "
                         "(Adam, AdamW, SGD, Lion)" % kind)
    first = optimizer.param_groups[0]
    for i, group in enumerate(optimizer.param_groups):
        for key, allowed in refused.items():
            if group.get(key, allowed) != allowed:
                raise ValueError("strata.torch: %s param_groups[%d] sets %s=%r, which the runtime's "
                                 "%s does not do" % (kind, i, key, group[key], kind))
        for key in keys:
            if group[key] != first[key]:
                raise ValueError(
                    "strata.torch: %s param_groups[%d] has %s=%r but param_groups[0] has %r; the "
                    "runtime applies one set of hyperparameters to every parameter"
                    % (kind, i, key, group[key], first[key]))
    params = {key: None for key in _OPTIMIZER_KEYS}
    params.update({key: (list(first[key]) if key == "betas" else first[key]) for key in keys})
    if kind == "Adam":
        params["adam_w_mode"] = False  # torch's Adam adds weight decay to the gradient (L2)
    return {"optimizer": {"type": kind, "params": params}}


def _merge(patch, more):
    """Merge patch `more` over `patch` (both dicts), as RFC 7386 composes."""
    out = dict(patch)
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _first_few(items, separator, most=4):
    """items joined, at most `most` of them, "..." for the rest (messages stay one line)."""
    return separator.join(items[:most]) + (separator + "..." if len(items) > most else "")


def _tensor_at(address, count, dtype, shape):
    """A tensor over `count` elements of runtime memory at `address` (no copy). Valid only while
    the runtime keeps that memory where it is (see strata_view_param)."""
    size = count * torch.tensor([], dtype=dtype).element_size()
    return torch.frombuffer((ctypes.c_byte * size).from_address(address), dtype=dtype).view(shape)


class _Param:
    """One registered parameter and how its values and gradients reach the runtime."""
    __slots__ = ("name", "p", "index", "group", "bridge", "store", "store_grad", "resident",
                 "arrived", "copied_version", "_views")

    def __init__(self, name, p):
        self.name, self.p = name, p
        self.index = self.group = None
        self.bridge = False      # fp32 module parameter, f16/bf16 runtime values
        self.store = None        # what was registered as data: p.data itself, or its f16/bf16 copy
        self.store_grad = None   # flat mode: the registered gradient buffer
        self.resident = False    # the runtime's values live in p.data itself (nothing to copy)
        self.arrived = False     # this micro-batch's gradient was handed over
        self.copied_version = -1
        self._views = {}         # (address, dtype) -> tensor over runtime memory

    def view_tensor(self, address, dtype):
        key = (address, dtype)
        t = self._views.get(key)
        if t is None:
            if len(self._views) >= 4:  # buffers that move (gathered at stage 3) would pile up
                self._views.clear()
            t = _tensor_at(address, self.p.numel(), dtype, self.p.shape)
            self._views[key] = t
        return t


class _Group:
    __slots__ = ("id", "params", "backward_open", "pending", "grads")

    def __init__(self, gid, params):
        self.id, self.params = gid, params
        self.backward_open = False
        self.pending = 0
        self.grads = None  # tensors over the lent gradient buffers while open for backward


class DistributedOptimizer:
    """Registers the model's parameters with the runtime and drives it from autograd hooks.

    optimizer: a torch.optim.Adam/AdamW/SGD whose algorithm and hyperparameters the runtime runs
        (they override the manifest's "optimizer"; its lr is followed on every step, so torch LR
        schedulers work), or None for the manifest's optimizer.
    model: the nn.Module (every ZeRO stage), or an iterable of (name, parameter) (stages 0-2).
    manifest, overrides: as strata.init; used when no runtime exists yet in this process. With one
        already created by strata.init, an optimizer must be None (its settings are fixed).

    Construction is collective: every rank registers the same parameters, rank 0's initial values
    are broadcast into every rank's module. Used by the training thread only.
    """

    def __init__(self, optimizer, model, manifest=None, overrides=None):
        self.optimizer = optimizer
        self.module = model if isinstance(model, torch.nn.Module) else None
        named = list(model.named_parameters() if self.module is not None else model)
        for item in named:
            if not (isinstance(item, tuple) and len(item) == 2 and
                    isinstance(item[1], torch.Tensor)):
                raise TypeError("strata.torch.DistributedOptimizer: model: expected an nn.Module or "
                                "(name, parameter) pairs, got an item %r" % (item,))
        self._params = [_Param(name, p) for name, p in named if p.requires_grad]
        if not self._params:
            raise ValueError("strata.torch.DistributedOptimizer: no trainable parameters")
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
        self._hooks = []
        self._groups = []
        self._flags = (ctypes.c_int32 * (2 * len(self._params)))()
        self._register()

    # ---- setup ----------------------------------------------------------------------------------
    def _register(self):
        rt = self.runtime
        model_dtype = _TORCH_DTYPE.get(self.training.model_dtype)
        if model_dtype is None:
            raise ValueError("strata.torch: the manifest's precision wants parameters in %s; "
                             "strata.torch handles f32, f16, bf16" % self.training.model_dtype)
        grouped = self.module is not None
        for rec in self._params:
            p = rec.p
            if p.device.type != "cpu" or not p.is_contiguous():
                raise ValueError("strata.torch: parameter %r: expected a contiguous CPU tensor"
                                 % rec.name)
            if p.dtype == model_dtype:
                rec.store = p.data
            elif p.dtype == torch.float32 and model_dtype != torch.float32:
                rec.bridge = True
                rec.store = p.data.to(model_dtype)
            else:
                raise ValueError("strata.torch: parameter %r is %s; the manifest's model dtype is %s"
                                 % (rec.name, p.dtype, self.training.model_dtype))
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
            rec.resident = not rec.bridge and view.data == rec.store.data_ptr()
            if not grouped and view.data != rec.store.data_ptr():
                raise ValueError(
                    "strata.torch: the sharding stratum partitions parameter %r (ZeRO stage 3): "
                    "pass the nn.Module to DistributedOptimizer, which gathers each module's "
                    "parameters around its forward" % rec.name)
        self._install_hooks()
        self.sync_module()  # rank 0's values, broadcast by finalize, into every module

    def _define_groups(self):
        by_param = {id(rec.p): rec for rec in self._params}
        for name, mod in self.module.named_modules():
            members = [by_param.pop(id(p)) for p in mod.parameters(recurse=False)
                       if id(p) in by_param]
            if not members:
                continue
            gid = self.runtime.define_group(name or "model", [rec.index for rec in members])
            group = _Group(gid, members)
            for rec in members:
                rec.group = group
            self._groups.append(group)
            self._hooks.append(mod.register_forward_pre_hook(self._make_pre_forward(group)))
            self._hooks.append(mod.register_forward_hook(self._make_post_forward(group)))

    def _install_hooks(self):
        for rec in self._params:
            fn = self._make_grad_hook(rec)
            p = rec.p
            if hasattr(p, "register_post_accumulate_grad_hook"):  # torch >= 2.1
                self._hooks.append(p.register_post_accumulate_grad_hook(lambda _p, fn=fn: fn()))
            else:
                # Horovod's way on older torch: a hook on the parameter's AccumulateGrad node runs
                # after the gradient was accumulated into p.grad. The node must be kept alive.
                node = p.expand_as(p).grad_fn.next_functions[0][0]
                self._hooks.append((node, node.register_hook(lambda *unused, fn=fn: fn())))

    # ---- forward: gather around each module ----------------------------------------------------
    def _make_pre_forward(self, group):
        def pre_forward(module, inputs):
            self.runtime.gather(group.id)
            for rec in group.params:
                if not rec.resident and rec.copied_version != self._version:
                    self._copy_in(rec)
        return pre_forward

    def _make_post_forward(self, group):
        def post_forward(module, inputs, output):
            self.runtime.release(group.id)
        return post_forward

    def _copy_in(self, rec):
        """The runtime's current values into the module's tensor (widened if bridged). Only while
        rec's group is gathered (or always readable)."""
        view = self.runtime.view(rec.index)
        if view.data is None:
            raise StrataError(_capi.ERR_INTERNAL, "strata.torch: the runtime gave no data for %r "
                              "while gathered" % rec.name)
        rec.p.data.copy_(rec.view_tensor(view.data, rec.store.dtype))  # .data: no autograd
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

    def _group_grad(self, rec):
        if rec.arrived:
            raise self._second_gradient(rec)
        group = rec.group
        rt = self.runtime
        if not group.backward_open:
            rt.gather(group.id, for_backward=True)
            group.backward_open = True
            group.pending = len(group.params)
            group.grads = {}
            for member in group.params:
                view = rt.view(member.index)
                if view.grad is None:
                    raise StrataError(_capi.ERR_INTERNAL, "strata.torch: the runtime lent no gradient buffer for %r"
                                      % member.name)
                group.grads[member.index] = member.view_tensor(view.grad, member.store.dtype)
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
        for member in group.params:
            self.runtime.grad_ready(member.index)
        group.backward_open = False
        group.grads = None
        self.runtime.release(group.id)

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
        forward at ZeRO stage 3 or with f16/bf16; harmless otherwise."""
        if self.module is None:
            for rec in self._params:
                if rec.bridge:
                    rec.p.data.copy_(rec.store)
            return
        for group in self._groups:
            self.runtime.gather(group.id)
            for rec in group.params:
                if not rec.resident:
                    self._copy_in(rec)
            self.runtime.release(group.id)

    def save(self, dir, tag=None, extra=None, blocking=True):
        """A checkpoint of the runtime's state (strata_save; collective, after a boundary step)."""
        self.runtime.save(dir, tag, extra, blocking)

    def load(self, dir, tag=None):
        """Loads a checkpoint (any world size, stage, precision) and copies it into the module."""
        result = self.runtime.load(dir, tag)
        self._version += 1
        self.sync_module()
        return result

    def close(self):
        """Removes the hooks and destroys the runtime (collective)."""
        for hook in self._hooks:
            (hook[1] if isinstance(hook, tuple) else hook).remove()
        self._hooks = []
        strata.shutdown()
