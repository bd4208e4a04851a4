"""DeepSpeed's engine on strata.torch: what deepspeed.initialize returns first. The model's
parameters are registered with the runtime (strata.torch.DistributedOptimizer), which reduces,
clips, steps, shards (zero_optimization), scales fp16 losses and schedules the learning rate as the
ds_config says; the engine keeps DeepSpeed's calls and counters over it.

Where Strata differs from DeepSpeed, visibly to a script:
- fp16/bf16: the module stays fp32 and the runtime holds its f16/bf16 values (strata.torch's
  bridge), because the CPU has no f16 matmul; floating-point inputs in f16/bf16 are widened to the
  module's dtype in forward (DeepSpeed would instead cast the module with .half()).
- The runtime trains every parameter with requires_grad, with one set of optimizer
  hyperparameters: model_parameters must cover them all, and param groups that differ are refused.
"""
import os
import warnings

import torch

import strata
import strata.torch as strata_torch

from . import _launch, _zero_init
from ._checkpoint import decode_client_state, encode_client_state
from ._dataloader import DeepSpeedDataLoader
from ._optimizer import DeepSpeedOptimizerView, RuntimeScheduler

_current = None  # the engine initialize made last (zero.GatheredParameters uses it)


def current_engine():
    return _current


def _trainable_ids(module):
    return {id(p) for p in module.parameters() if p.requires_grad}


def _check_model_parameters(module, model_parameters):
    """model_parameters (DeepSpeed builds the optimizer from them) must be the module's trainable
    parameters, in one group of hyperparameters; returns the group's hyperparameters."""
    if model_parameters is None:
        return {}
    items = list(model_parameters)
    ids, settings = set(), None
    for i, item in enumerate(items):
        if isinstance(item, dict):
            params = item.get("params", [])
            params = [params] if isinstance(params, torch.Tensor) else list(params)
            extra = {k: v for k, v in item.items() if k not in ("params", "name")}
            if settings is None:
                settings = extra
            elif extra != settings:
                raise ValueError(
                    "strata.deepspeed.initialize: model_parameters[%d] sets %r but "
                    "model_parameters[0] sets %r; the runtime applies one set of optimizer "
                    "hyperparameters to every parameter (put them in the ds_config's "
                    "optimizer.params)" % (i, extra, settings))
        elif isinstance(item, torch.Tensor):
            params = [item]
        else:
            raise TypeError("strata.deepspeed.initialize: model_parameters: expected tensors or "
                            "param-group dicts, got %s" % type(item).__name__)
        ids.update(id(p) for p in params if p.requires_grad)
    missing = [name for name, p in module.named_parameters()
               if p.requires_grad and id(p) not in ids]
    if missing:
        raise ValueError("strata.deepspeed.initialize: model_parameters leaves out trainable "
                         "parameters of the model (%s); the runtime trains every parameter with "
                         "requires_grad: set requires_grad=False on those it must not train"
                         % ", ".join(missing[:4]) + (", ..." if len(missing) > 4 else ""))
    foreign = ids - _trainable_ids(module)
    if foreign:
        raise ValueError("strata.deepspeed.initialize: model_parameters holds %d tensor(s) that "
                         "are not parameters of the model" % len(foreign))
    return settings or {}


def _widen(value, dtype):
    """f16/bf16 floating tensors in nested args as `dtype` (the bridged module's)."""
    if isinstance(value, torch.Tensor):
        if value.dtype in (torch.float16, torch.bfloat16) and value.dtype != dtype:
            return value.to(dtype)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_widen(v, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _widen(v, dtype) for k, v in value.items()}
    return value


class DeepSpeedEngine:
    """deepspeed.DeepSpeedEngine's training calls over strata.torch.DistributedOptimizer."""

    def __init__(self, model, optimizer, model_parameters, training_data, lr_scheduler, config,
                 collate_fn=None, deferred_slices=None):
        global _current
        if not isinstance(model, torch.nn.Module):
            raise TypeError("strata.deepspeed.initialize: model: expected a torch.nn.Module, got %s"
                            % type(model).__name__)
        self.module = model
        self._config = config
        if strata.is_initialized():
            raise ValueError("strata.deepspeed.initialize: this process already has a runtime "
                             "(one per process, and it cannot start twice): one initialize per "
                             "process")
        hyper = _check_model_parameters(model, model_parameters)
        if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
            if not callable(optimizer):
                raise TypeError("strata.deepspeed.initialize: optimizer: expected a "
                                "torch.optim.Optimizer or a callable(params), got %s"
                                % type(optimizer).__name__)
            optimizer = optimizer(model.parameters())
        if optimizer is None and config.get("optimizer") is None:
            raise ValueError("strata.deepspeed.initialize: no optimizer: pass optimizer= or set "
                             "the ds_config's \"optimizer\" (%s)" % config.source)
        overrides = dict(config.overrides or {})
        if lr_scheduler is not None and config.get("scheduler") is not None:
            raise ValueError("strata.deepspeed.initialize: both lr_scheduler= and the ds_config's "
                             "\"scheduler\" (%s) would set the learning rate; give one"
                             % config.source)
        if optimizer is not None and config.get("optimizer") is not None:
            warnings.warn("strata.deepspeed: the optimizer passed to initialize replaces the "
                          "ds_config's \"optimizer\" block (%s)" % config.source)
        if optimizer is None and hyper:
            block = dict(config.get("optimizer") or {})
            params = dict(block.get("params") or {})
            params.update(hyper)
            overrides["optimizer"] = {"params": params}
        self._client_optimizer = optimizer
        init = None
        if any(p.is_meta for p in model.parameters()):
            if self.zero_optimization_stage() != 3:
                raise ValueError(
                    "strata.deepspeed.initialize: the model was built under deepspeed.zero.Init "
                    "(or on the meta device), which partitions it for ZeRO stage 3, but the "
                    "ds_config (%s) says zero_optimization.stage %d: build it outside zero.Init "
                    "(zero.Init(enabled=False)) or use stage 3"
                    % (config.source, self.zero_optimization_stage()))
            init = _zero_init.whole_value_writer(deferred_slices or {})
        self._opt = strata_torch.DistributedOptimizer(optimizer, model, manifest=config.manifest,
                                                      overrides=overrides or None, init=init)
        self._runtime = self._opt.runtime
        self.optimizer = DeepSpeedOptimizerView(self, optimizer)
        if lr_scheduler is not None and not hasattr(lr_scheduler, "step") and callable(lr_scheduler):
            lr_scheduler = lr_scheduler(self.optimizer)  # DeepSpeed's callable(optimizer) form
        self._client_scheduler = lr_scheduler
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and config.get("scheduler") is not None:
            self.lr_scheduler = RuntimeScheduler(self._runtime)
        self._compute_dtype = next((p.dtype for p in model.parameters()), torch.float32)
        self._model_dtype = self._opt.training.model_dtype
        self.micro_steps = 0
        self.global_steps = 0
        self.global_samples = 0
        self.skipped_steps = 0
        self._grad_norm = None
        self._last_outcome = None
        self.training_dataloader = None
        if training_data is not None:
            self.training_dataloader = self.deepspeed_io(training_data, collate_fn=collate_fn)
        _current = self

    # ---- the place of this rank ----------------------------------------------------------------
    @property
    def global_rank(self):
        return self._runtime.world.rank

    @property
    def local_rank(self):
        return self._runtime.world.local_rank

    @property
    def world_size(self):
        return self._runtime.world.size

    dp_world_size = world_size

    @property
    def device(self):
        return torch.device("cpu")

    # ---- configuration ------------------------------------------------------------------------
    def train_batch_size(self):
        return int(self._opt.training.train_batch_size)

    def train_micro_batch_size_per_gpu(self):
        return int(self._opt.training.micro_batch_size)

    def gradient_accumulation_steps(self):
        return int(self._opt.training.gradient_accumulation_steps)

    def gradient_clipping(self):
        return float(self._opt.training.gradient_clipping)

    def zero_optimization_stage(self):
        zero = self._config.get("zero_optimization") or {}
        return int(zero.get("stage", 0)) if isinstance(zero, dict) else 0

    def zero_optimization(self):
        return self.zero_optimization_stage() > 0

    def fp16_enabled(self):
        return self._model_dtype == "f16"

    def bfloat16_enabled(self):
        return self._model_dtype == "bf16"

    def get_lr(self):
        if self._client_optimizer is not None and self._config.get("scheduler") is None:
            return [group["lr"] for group in self._client_optimizer.param_groups]
        return [self._runtime.lr]

    def get_global_grad_norm(self):
        """The gradients' global norm at the last optimizer step (before clipping), or None
        before the first."""
        return self._grad_norm

    def get_loss_scale(self):
        return self._runtime.loss_scale

    def was_step_applied(self):
        return self._last_outcome == "applied"

    def is_gradient_accumulation_boundary(self):
        """Whether the coming step() ends an optimizer step (DeepSpeed's rule)."""
        return (self.micro_steps + 1) % self.gradient_accumulation_steps() == 0

    # ---- training ------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    def forward(self, *args, **kwargs):
        if self._model_dtype != "f32":
            args, kwargs = _widen(args, self._compute_dtype), _widen(kwargs, self._compute_dtype)
        return self.module(*args, **kwargs)

    def backward(self, loss, retain_graph=False, scale_wrt_gas=True):
        """loss × the loss scale (÷ gradient_accumulation_steps with scale_wrt_gas), backward;
        the gradients reach the runtime as autograd makes them. Returns loss."""
        scale = self._runtime.loss_scale
        if scale_wrt_gas:
            scale /= self.gradient_accumulation_steps()
        (loss * scale).backward(retain_graph=retain_graph)
        return loss

    def step(self, lr_kwargs=None):
        """After every micro-batch's backward (collective): at the boundary the runtime reduces,
        clips and applies the optimizer step, then a client lr_scheduler steps (not after a
        skipped fp16 step, as DeepSpeed)."""
        self.optimizer.before_step()
        result = self._opt.step()
        self.optimizer.after_step()
        self.micro_steps += 1
        self._last_outcome = result.outcome
        if result.outcome == "accumulated":
            return
        self.global_steps = int(result.global_steps)
        self.skipped_steps = int(result.skipped_steps)
        self.global_samples += self.train_batch_size()
        self._grad_norm = float(result.grad_norm)
        if result.outcome == "applied" and self._client_optimizer is not None and \
                hasattr(self._client_optimizer, "_step_count"):
            self._client_optimizer._step_count += 1  # it stepped, in the runtime (torch's LR
            # schedulers warn about a scheduler stepped before its optimizer otherwise)
        if result.outcome == "applied" and self._client_scheduler is not None:
            self._client_scheduler.step(**(lr_kwargs or {}))

    def zero_grad(self):
        """Nothing to do: the runtime zeroes its gradient buffers after each optimizer step."""

    def train(self, mode=True):
        self.module.train(mode)
        return self

    def eval(self):
        self.module.eval()
        return self

    def parameters(self, recurse=True):
        return self.module.parameters(recurse)

    def named_parameters(self, *args, **kwargs):
        return self.module.named_parameters(*args, **kwargs)

    def __getattr__(self, name):
        # As DeepSpeed's engine: what it does not have, the module may.
        module = self.__dict__.get("module")
        if module is not None and name != "module":
            try:
                return getattr(module, name)
            except AttributeError:
                pass
        raise AttributeError("'DeepSpeedEngine' object has no attribute %r" % name)

    # ---- data ----------------------------------------------------------------------------------
    def deepspeed_io(self, dataset, batch_size=None, route=None, pin_memory=False,
                     data_sampler=None, collate_fn=None, num_local_io_workers=None):
        return DeepSpeedDataLoader(
            dataset, batch_size or self.train_micro_batch_size_per_gpu(), self.global_rank,
            self.world_size, collate_fn=collate_fn, num_workers=num_local_io_workers or 0,
            data_sampler=data_sampler,
            drop_last=bool(self._config.get("dataloader_drop_last", False)))

    # ---- checkpoints ---------------------------------------------------------------------------
    def save_checkpoint(self, save_dir, tag=None, client_state=None, save_latest=True,
                        exclude_frozen_parameters=False):
        """A checkpoint in save_dir/tag (default global_step<N>) that loads at any world size,
        ZeRO stage and precision; client_state (any picklable dict) and a client lr_scheduler's
        state go with it. Collective, after an optimizer step's last micro-batch."""
        if not save_latest:
            warnings.warn("strata.deepspeed.save_checkpoint: save_latest=False: the runtime always "
                          "names a complete checkpoint in save_dir/latest")
        scheduler = None
        if self._client_scheduler is not None and hasattr(self._client_scheduler, "state_dict"):
            scheduler = self._client_scheduler.state_dict()
        extra = {"deepspeed": encode_client_state({"client_state": client_state or {},
                                                   "lr_scheduler": scheduler,
                                                   "global_samples": self.global_samples})}
        self._opt.save(save_dir, tag, extra)
        return True

    def load_checkpoint(self, load_dir, tag=None, load_module_strict=True,
                        load_optimizer_states=True, load_lr_scheduler_states=True,
                        load_module_only=False, custom_load_fn=None):
        """Loads save_dir/tag (default: the one save_dir/latest names) into the runtime and the
        module; returns (path, client_state), or (None, None) when there is none, as DeepSpeed."""
        for name, value, default in (("load_optimizer_states", load_optimizer_states, True),
                                     ("load_module_only", load_module_only, False),
                                     ("custom_load_fn", custom_load_fn, None)):
            if value != default:
                raise NotImplementedError(
                    "strata.deepspeed.load_checkpoint: %s=%r: the runtime loads parameters, "
                    "optimizer state and counters together; to start from weights only, load "
                    "them into the model before deepspeed.initialize" % (name, value))
        # Every rank must take the same branch (load is collective): the ranks agree first.
        found = tag is not None or os.path.isfile(os.path.join(os.fspath(load_dir), "latest"))
        if not _launch.same_on_every_rank(self._runtime, found):
            raise RuntimeError("strata.deepspeed.load_checkpoint: %s/latest exists on some ranks "
                               "and not on others; the checkpoint folder must be one every rank "
                               "reads" % load_dir)
        if not found:
            warnings.warn("strata.deepspeed.load_checkpoint: no checkpoint in %s (no 'latest' "
                          "file); nothing loaded" % load_dir)
            return None, None
        result = self._opt.load(load_dir, tag)
        state = decode_client_state((result.extra or {}).get("deepspeed"))
        self.global_steps = int(result.global_steps)
        self.skipped_steps = int(result.skipped_steps)
        self.global_samples = int(state.get("global_samples", self.global_steps *
                                            self.train_batch_size()))
        self.micro_steps = self.global_steps * self.gradient_accumulation_steps()
        scheduler = state.get("lr_scheduler")
        if (load_lr_scheduler_states and scheduler is not None and
                self._client_scheduler is not None):
            self._client_scheduler.load_state_dict(scheduler)
        self._restore_client_lr()
        return os.path.join(os.fspath(load_dir), result.tag), state.get("client_state", {})

    def _restore_client_lr(self):
        """A client torch optimizer's lr as it was at the save (DeepSpeed restores it with the
        optimizer state): its scheduler's last lr, else the runtime's loaded one. The runtime
        takes it from param_groups at the next step."""
        if self._client_optimizer is None:
            return
        groups = self._client_optimizer.param_groups
        lrs = [self._runtime.lr] * len(groups)
        if self._client_scheduler is not None and hasattr(self._client_scheduler, "get_last_lr"):
            lrs = list(self._client_scheduler.get_last_lr())
        for group, lr in zip(groups, lrs):
            group["lr"] = lr

    def module_state_dict(self):
        """The module's state_dict with every parameter whole (collective)."""
        return self._opt.module_state_dict()

    def save_16bit_model(self, save_dir, save_filename="pytorch_model.bin"):
        """Rank 0 writes the whole model's state_dict (in the module's dtype) to
        save_dir/save_filename (collective: stage 3 gathers it). Returns True."""
        state = self._opt.module_state_dict()
        if self.global_rank == 0:
            os.makedirs(save_dir, exist_ok=True)
            torch.save(state, os.path.join(save_dir, save_filename))
        return True

    save_fp16_model = save_16bit_model

    def destroy(self):
        """Ends training: the module gets its whole parameters back, the runtime is destroyed
        (collective)."""
        global _current
        if _current is self:
            _current = None
        _launch.destroy_torch_group()
        self._opt.close()
