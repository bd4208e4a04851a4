"""Trains a GPT-style byte-level language model (model.py) on Debian's fortunes (data.py),
data-parallel through Strata (strata.torch.DistributedOptimizer), torch DDP, torch FSDP or
DeepSpeed, with the same initial values and the same batches in every mode.

  mpirun -np 2 /usr/bin/python3 examples/transformer/train.py [--mode strata|ddp|fsdp|deepspeed]
      [--manifest F] [--overrides JSON] [--size tiny|small|base|100m|350m|1b] [--layers N]
      [--d-model N] [--heads N] [--context T] [--batch N] [--max-steps N] [--epochs N]
      [--steps-per-epoch N] [--seed N] [--lr X] [--weight-decay X] [--data-dir D]
      [--eval-every N] [--eval-batches N] [--dump-params FILE] [--init-on cpu|meta]
      [--leaf-blocks] [--threads N] [--log-every N]

strata:    the manifest decides what the runtime does (ZeRO stage, precision, clipping, comm); the
           optimizer is torch.optim.AdamW(lr, betas, eps, weight_decay from the manifest's optimizer
           params, --lr/--weight-decay over them), handed to DistributedOptimizer.
ddp:       torch.distributed gloo, DistributedDataParallel, the same AdamW, clip_grad_norm_
           (gradient_clipping); fp32.
fsdp:      torch.distributed.fsdp FULL_SHARD (each Block its own unit), CPU, gloo; fp32. Needs a
           torch whose FSDP imports and runs on CPU (torch 2.x); otherwise exits 2 saying why.
deepspeed: deepspeed.initialize with the manifest's batch, clipping and zero_optimization block
           (use examples/manifests/zero3.json for ZeRO-3), the same AdamW as a client optimizer,
           DeepSpeed's CPU accelerator and gloo. Exits 2 if deepspeed is not installed.
Rank and size: RANK/WORLD_SIZE or Open MPI's OMPI_COMM_WORLD_*; MASTER_ADDR/MASTER_PORT default to
127.0.0.1:29500 (torch modes).

Batches: global step s (from 0) trains --batch sequences of --context tokens whose start offsets in
the training split numpy draws from (seed, s); they are cut as the fashion_mnist hosts cut a global
batch (rank r's micro-step m takes micro-batch m*world + r), so every mode and world size sees the
same global batch. Held-out loss (`eval step S loss X`): mean cross entropy per token over the first
--eval-batches x --batch non-overlapping windows of the validation split, each rank scoring a
contiguous share in the same number of forward passes (at ZeRO stage 3 every forward is
collective), sums reduced over ranks.
"""
import argparse
import contextlib
import json
import math
import os
import resource
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import data as text_data  # noqa: E402
from model import GPT, SIZES, Block, Config, check_config, count_parameters  # noqa: E402

MODES = ("strata", "ddp", "fsdp", "deepspeed")


class UsageError(Exception):
    """Bad input found after argument parsing (a file, a manifest key, a flag combination): exit
    status 2."""


# ---- arguments --------------------------------------------------------------------------------


def default_manifest():
    env = os.environ.get("STRATA_MANIFEST", "")
    if env:
        return env
    return os.path.normpath(os.path.join(HERE, "..", "manifests", "default.json"))


def int_at_least(low):
    """An argparse type: an integer >= low."""
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}, got {value}")
        return value
    return parse


positive_int = int_at_least(1)
non_negative_int = int_at_least(0)


def non_negative_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def json_object(text):
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"malformed JSON ({e})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("not a JSON object")
    return value


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Train a GPT-style byte-level language model on Debian's fortunes through "
                    "Strata, torch DDP, torch FSDP or DeepSpeed")
    p.add_argument("--mode", choices=MODES, default="strata",
                   help="strata: strata.torch.DistributedOptimizer; ddp: torch DDP; fsdp: torch "
                        "FSDP FULL_SHARD; deepspeed: DeepSpeed (all over gloo on CPU)")
    p.add_argument("--manifest", default=default_manifest(),
                   help="Strata manifest (JSON); default $STRATA_MANIFEST or "
                        "examples/manifests/default.json")
    p.add_argument("--overrides", type=json_object, default=None,
                   help="JSON merge patch over the manifest (RFC 7386); --batch is applied over it")
    p.add_argument("--size", choices=tuple(SIZES), default="tiny", help="model size preset")
    p.add_argument("--layers", type=positive_int, default=None, help="override the preset's layers")
    p.add_argument("--d-model", type=positive_int, default=None,
                   help="override the preset's model width")
    p.add_argument("--heads", type=positive_int, default=None,
                   help="override the preset's attention heads")
    p.add_argument("--context", type=positive_int, default=None,
                   help="tokens per sequence (override the preset's context)")
    p.add_argument("--batch", type=positive_int, default=16,
                   help="global sequences per optimizer step (overrides train_batch_size)")
    p.add_argument("--max-steps", type=non_negative_int, default=0,
                   help="stop after this many optimizer steps (0: no limit)")
    p.add_argument("--epochs", type=positive_int, default=1, help="epochs to train")
    p.add_argument("--steps-per-epoch", type=non_negative_int, default=0,
                   help="optimizer steps per epoch (0: as many as one pass over the training "
                        "split's tokens takes)")
    p.add_argument("--seed", type=non_negative_int, default=1,
                   help="seed of the initialisation and of the batches")
    p.add_argument("--lr", type=non_negative_float, default=None,
                   help="AdamW learning rate (default: the manifest's)")
    p.add_argument("--weight-decay", type=non_negative_float, default=None,
                   help="AdamW weight decay (default: the manifest's)")
    p.add_argument("--data-dir", default=text_data.DEFAULT_DATA_DIR,
                   help="folder of fortune files (Debian package fortunes)")
    p.add_argument("--eval-every", type=non_negative_int, default=0,
                   help="also evaluate every N optimizer steps (0: per epoch and at the end)")
    p.add_argument("--eval-batches", type=non_negative_int, default=4,
                   help="held-out sequences scored per evaluation, in global batches (0: all)")
    p.add_argument("--dump-params", metavar="FILE",
                   help="rank 0 writes the final parameters here (.npz, named_parameters() names "
                        "and order)")
    p.add_argument("--init-on", choices=("cpu", "meta"), default="cpu",
                   help="meta (strata mode, ZeRO stage 3): build the model on the meta device, "
                        "so no rank ever holds it whole; strata.torch writes it group by group "
                        "(the same values as cpu)")
    p.add_argument("--leaf-blocks", action="store_true",
                   help="gather each transformer block as one unit at ZeRO stage 3 (strata: "
                        "leaf_modules=[Block]; deepspeed: deepspeed.utils.set_z3_leaf_modules; "
                        "fsdp always wraps each block)")
    p.add_argument("--threads", type=positive_int, default=None, help="torch.set_num_threads(N)")
    p.add_argument("--log-every", type=non_negative_int, default=1,
                   help="print a step line every N optimizer steps (0: none)")
    return p.parse_args(argv)


def model_config(args):
    base = SIZES[args.size]
    cfg = Config(layers=args.layers or base.layers, d_model=args.d_model or base.d_model,
                 heads=args.heads or base.heads, context=args.context or base.context)
    problems = check_config(cfg)
    if problems:
        raise UsageError(f"--size {args.size} with the given overrides: {'; '.join(problems)}")
    if args.init_on == "meta" and args.mode != "strata":
        raise UsageError(f"--init-on meta: only --mode strata writes a model built on the meta "
                         f"device (got --mode {args.mode})")
    return cfg


# ---- manifest ---------------------------------------------------------------------------------


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def runtime_overrides(args):
    """--overrides with --batch's keys over it, as the C++ host builds its patch."""
    patch = dict(args.overrides or {})
    if args.batch is not None:
        patch["train_batch_size"] = args.batch
        patch["train_micro_batch_size_per_gpu"] = None
    return patch or None


def load_manifest(path, patch):
    try:
        with open(path) as f:
            manifest = json.load(f)
    except FileNotFoundError:
        raise UsageError(f"--manifest {path}: no such file") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"--manifest {path}: malformed JSON ({e})") from None
    if not isinstance(manifest, dict):
        raise UsageError(f"--manifest {path}: not a JSON object")
    return merge_patch(manifest, patch) if patch else manifest


def batch_split(manifest, world):
    """DeepSpeed's rule: train_batch_size = micro x accumulation x world, any two give the third.
    Returns (global, micro, accumulation)."""
    def get(key):
        value = manifest.get(key)
        if value is not None and (not isinstance(value, int) or value < 1):
            raise UsageError(f"manifest: {key} must be a positive integer, got {value!r}")
        return value

    total = get("train_batch_size")
    micro = get("train_micro_batch_size_per_gpu")
    accum = get("gradient_accumulation_steps")
    if total is not None and micro is not None and accum is None:
        accum = total // (micro * world)
    elif total is not None and micro is None:
        accum = accum or 1
        micro = total // (accum * world)
    elif total is None and micro is not None:
        accum = accum or 1
        total = micro * accum * world
    elif total is None:
        raise UsageError("manifest: needs train_batch_size or train_micro_batch_size_per_gpu")
    if micro < 1 or accum < 1 or micro * accum * world != total:
        raise UsageError(f"manifest: train_batch_size {total} is not micro batch {micro} x "
                         f"gradient_accumulation_steps {accum} x world size {world}")
    return total, micro, accum


class Hyper:
    """AdamW's hyperparameters (the manifest's optimizer params, --lr/--weight-decay over them)
    and the clipping norm: the same in every mode."""

    def __init__(self, manifest, args):
        optimizer = manifest.get("optimizer") or {}
        kind = str(optimizer.get("type", "AdamW"))
        if kind.lower() != "adamw":
            raise UsageError(f"manifest optimizer.type {kind!r}: this example trains with AdamW "
                             f"in every mode (its params are read from the manifest)")
        params = optimizer.get("params") or {}
        try:
            self.lr = float(params.get("lr", 1e-3)) if args.lr is None else args.lr
            self.betas = tuple(float(b) for b in params.get("betas", (0.9, 0.999)))
            self.eps = float(params.get("eps", 1e-8))
            self.weight_decay = (float(params.get("weight_decay", 0.01))
                                 if args.weight_decay is None else args.weight_decay)
            clip = manifest.get("gradient_clipping", 0.0)
            self.clip = float(clip) if clip else 0.0
        except (TypeError, ValueError) as e:
            raise UsageError(f"manifest: bad optimizer params or gradient_clipping ({e})") from None
        if len(self.betas) != 2:
            raise UsageError(f"manifest: optimizer betas {list(self.betas)}: expected two")

    def adamw(self, params):
        return torch.optim.AdamW(params, lr=self.lr, betas=self.betas, eps=self.eps,
                                 weight_decay=self.weight_decay)


def fp32_only(manifest, mode):
    for key in ("fp16", "bf16"):
        if isinstance(manifest.get(key), dict) and manifest[key].get("enabled"):
            raise UsageError(f"--mode {mode}: manifest key {key}.enabled: {mode} mode trains fp32 "
                             f"only")
    if manifest.get("scheduler"):
        raise UsageError(f"--mode {mode}: manifest key scheduler: not supported in {mode} mode")


def world_from_env(mode):
    rank = os.environ.get("RANK", os.environ.get("OMPI_COMM_WORLD_RANK"))
    size = os.environ.get("WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE"))
    if rank is None or size is None:
        raise UsageError(f"--mode {mode}: no rank and world size in the environment (RANK/"
                         f"WORLD_SIZE or OMPI_COMM_WORLD_RANK/SIZE); start it with mpirun or "
                         f"strata-run")
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29500")
    return int(rank), int(size)


def lm_loss(logits, targets, reduction="mean"):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                           reduction=reduction)


# ---- the four ways of running data-parallel ---------------------------------------------------


class StrataBackend:
    """Gradients go to the Strata runtime; it reduces, clips and steps."""

    def __init__(self, args, model, manifest, hyper):
        import strata.torch as st

        self.strata = __import__("strata")
        self.model = model
        init = model.initializer(args.seed) if args.init_on == "meta" else None
        self.opt = st.DistributedOptimizer(hyper.adamw(model.parameters()), model,
                                           manifest=args.manifest,
                                           overrides=runtime_overrides(args), init=init,
                                           leaf_modules=[Block] if args.leaf_blocks else None)
        rank, size, _, _ = self.opt.world
        self.rank, self.size = rank, size
        t = self.opt.training
        self.global_batch = int(t.train_batch_size)
        self.micro = int(t.micro_batch_size)
        self.accumulation = int(t.gradient_accumulation_steps)
        self.global_steps = 0

    def micro_step(self, x, y, last):
        loss = lm_loss(self.model(x), y)
        self.opt.scale_loss(loss).backward()
        result = self.opt.step()  # after every micro-batch
        if last:
            if result.outcome == "accumulated":
                raise RuntimeError(f"the runtime did not step after {self.accumulation} "
                                   f"micro-batches (gradient_accumulation_steps)")
            self.global_steps = int(result.global_steps)
        elif result.outcome != "accumulated":
            raise RuntimeError(f"the runtime stepped ({result.outcome}) before the last of "
                               f"{self.accumulation} micro-batches")
        return float(loss.detach())

    def forward(self, x):
        return self.model(x)

    def allreduce_sum(self, values):
        return self.strata.allreduce(np.asarray(values, dtype=np.float64), op="sum")

    def runtime_peak_mib(self):
        """This rank's runtime memory peaks (its memory report), MiB: every category summed, and
        the model state alone (params, grads, master, optimizer state: without the staging
        buffers collectives use, which reduce_bucket_size and allgather_bucket_size bound)."""
        peak = self.opt.runtime.memory()["peak"]
        state = sum(peak[c] for c in ("params", "grads", "master", "optimizer_state"))
        return sum(peak.values()) / 2.0**20, state / 2.0**20

    def full_state(self):
        """name -> full tensor on every rank (collective)."""
        if hasattr(self.opt, "module_state_dict"):
            return self.opt.module_state_dict()
        self.opt.sync_module()
        return self.model.state_dict()

    def close(self):
        # The script ends here: the module need not become whole again (at stage 3 that would
        # bring the whole model back into memory beside the runtime's state).
        self.opt.close(materialize=False)


class TorchDistBackend:
    """What ddp and fsdp share: the process group, the batch split, reductions."""

    def __init__(self, args, manifest, mode):
        import torch.distributed as dist

        self.dist = dist
        self.rank, self.size = world_from_env(mode)
        fp32_only(manifest, mode)
        self.global_batch, self.micro, self.accumulation = batch_split(manifest, self.size)
        self.global_steps = 0

    def allreduce_sum(self, values):
        t = torch.tensor(values, dtype=torch.float64)
        self.dist.all_reduce(t)
        return t.numpy()


class DdpBackend(TorchDistBackend):
    """torch.distributed + DistributedDataParallel + torch.optim.AdamW + clip_grad_norm_."""

    def __init__(self, args, model, manifest, hyper):
        super().__init__(args, manifest, "ddp")
        from torch.nn.parallel import DistributedDataParallel

        self.dist.init_process_group("gloo", rank=self.rank, world_size=self.size)
        self.model = model
        self.ddp = DistributedDataParallel(model)  # broadcasts rank 0's parameters
        self.opt = hyper.adamw(model.parameters())
        self.clip = hyper.clip

    def micro_step(self, x, y, last):
        sync = contextlib.nullcontext() if last else self.ddp.no_sync()
        with sync:
            loss = lm_loss(self.ddp(x), y)
            (loss / self.accumulation).backward()
        if last:
            if self.clip > 0:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
            self.opt.step()
            self.opt.zero_grad()
            self.global_steps += 1
        return float(loss.detach())

    def forward(self, x):
        return self.model(x)  # every rank holds every parameter: no collective needed

    def full_state(self):
        return self.model.state_dict()

    def close(self):
        # DDP first, while its process group still exists and every rank is past its last
        # collective (a DDP torn down after destroy_process_group can hang in torch 1.13 + gloo).
        self.dist.barrier()
        self.ddp = self.opt = None
        self.dist.destroy_process_group()


class FsdpBackend(TorchDistBackend):
    """torch.distributed.fsdp FULL_SHARD, one unit per Block plus the root, CPU, gloo."""

    WRAPPER_PREFIXES = ("_fsdp_wrapped_module.", "_checkpoint_wrapped_module.", "module.")

    def __init__(self, args, model, manifest, hyper):
        super().__init__(args, manifest, "fsdp")
        import functools
        try:
            from torch.distributed.fsdp import (FullStateDictConfig, FullyShardedDataParallel,
                                                ShardingStrategy, StateDictType)
            from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
        except Exception as e:  # torch 1.13 on Python 3.11 fails inside its dataclasses
            raise UsageError(f"--mode fsdp: torch {torch.__version__} cannot import "
                             f"torch.distributed.fsdp ({type(e).__name__}: {e}); fsdp mode needs "
                             f"torch 2.x") from None
        self.FSDP, self.StateDictType, self.FullStateDictConfig = (
            FullyShardedDataParallel, StateDictType, FullStateDictConfig)
        self.dist.init_process_group("gloo", rank=self.rank, world_size=self.size)
        policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
        options = dict(auto_wrap_policy=policy, sharding_strategy=ShardingStrategy.FULL_SHARD)
        if int(torch.__version__.split(".")[0]) >= 2:
            options["device_id"] = torch.device("cpu")
        try:
            self.fsdp = FullyShardedDataParallel(model, **options)
        except Exception as e:
            raise UsageError(f"--mode fsdp: torch {torch.__version__} FSDP refused to wrap the "
                             f"model on CPU ({type(e).__name__}: {e}); fsdp mode needs a torch "
                             f"whose FSDP runs on CPU with gloo") from None
        self.opt = hyper.adamw(self.fsdp.parameters())
        self.clip = hyper.clip

    def micro_step(self, x, y, last):
        sync = contextlib.nullcontext() if last else self.fsdp.no_sync()
        with sync:
            loss = lm_loss(self.fsdp(x), y)
            (loss / self.accumulation).backward()
        if last:
            if self.clip > 0:
                self.fsdp.clip_grad_norm_(self.clip)
            self.opt.step()
            self.opt.zero_grad()
            self.global_steps += 1
        return float(loss.detach())

    def forward(self, x):
        return self.fsdp(x)  # collective: gathers each unit

    def full_state(self):
        # offload_to_cpu=True breaks on CPU (torch 2.3: "setStorage ... storage of size 0"): the
        # gathered tensors are CPU tensors already.
        config = self.FullStateDictConfig(offload_to_cpu=False, rank0_only=False)
        with self.FSDP.state_dict_type(self.fsdp, self.StateDictType.FULL_STATE_DICT, config):
            state = {name: value.detach().clone() for name, value in self.fsdp.state_dict().items()}
        clean = {}
        for name, value in state.items():
            for prefix in self.WRAPPER_PREFIXES:
                name = name.replace(prefix, "")
            clean[name] = value
        return clean

    def close(self):
        self.dist.barrier()
        self.fsdp = self.opt = None
        self.dist.destroy_process_group()


class DeepSpeedBackend:
    """deepspeed.initialize with the manifest's batch, clipping and ZeRO settings, CPU, gloo."""

    def __init__(self, args, model, manifest, hyper):
        rank, size = world_from_env("deepspeed")
        os.environ.setdefault("RANK", str(rank))
        os.environ.setdefault("WORLD_SIZE", str(size))
        os.environ.setdefault("LOCAL_RANK", os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
        os.environ.setdefault("LOCAL_SIZE", os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
        try:
            import deepspeed
        except ImportError as e:
            raise UsageError(f"--mode deepspeed: cannot import deepspeed ({e}); install it "
                             f"(pip install deepspeed) to compare with DeepSpeed") from None
        self.deepspeed = deepspeed
        self.rank, self.size = rank, size
        self.global_batch, self.micro, self.accumulation = batch_split(manifest, size)
        zero = dict(manifest.get("zero_optimization") or {"stage": 0})
        self.stage = int(zero.get("stage", 0))
        config = {
            "train_batch_size": self.global_batch,
            "train_micro_batch_size_per_gpu": self.micro,
            "gradient_accumulation_steps": self.accumulation,
            "gradient_clipping": hyper.clip,
            "zero_optimization": zero,
            "zero_allow_untested_optimizer": True,  # the client's torch AdamW
            "steps_per_print": 1 << 30,
        }
        if "offload_optimizer" in zero or "offload_param" in zero:
            # ZeRO-Offload / -Infinity with the same torch AdamW as every other mode (DeepSpeed
            # asks for its DeepSpeedCPUAdam otherwise): the arithmetic stays comparable.
            config["zero_force_ds_cpu_optimizer"] = False
        for key in ("fp16", "bf16"):
            if isinstance(manifest.get(key), dict):
                config[key] = manifest[key]
        if manifest.get("scheduler"):
            raise UsageError("--mode deepspeed: manifest key scheduler: not supported here")
        deepspeed.init_distributed(dist_backend="gloo", auto_mpi_discovery=False)
        if args.leaf_blocks:
            from deepspeed.utils import set_z3_leaf_modules
            set_z3_leaf_modules(model, [Block])
        self.model = model
        self.engine, _, _, _ = deepspeed.initialize(model=model,
                                                    optimizer=hyper.adamw(model.parameters()),
                                                    config=config)
        self.global_steps = 0

    def micro_step(self, x, y, last):
        loss = lm_loss(self.engine(x), y)
        self.engine.backward(loss)  # scales by 1/gradient_accumulation_steps itself
        self.engine.step()
        if last:
            self.global_steps = int(self.engine.global_steps)
        return float(loss.detach())

    def forward(self, x):
        return self.engine(x)

    def allreduce_sum(self, values):
        t = torch.tensor(values, dtype=torch.float64)
        torch.distributed.all_reduce(t)
        return t.numpy()

    def full_state(self):
        params = list(self.model.parameters())
        gathered = (self.deepspeed.zero.GatheredParameters(params, modifier_rank=None)
                    if self.stage == 3 else contextlib.nullcontext())
        with gathered:
            return {name: p.detach().clone() for name, p in self.model.named_parameters()}

    def close(self):
        torch.distributed.barrier()


BACKENDS = {"strata": StrataBackend, "ddp": DdpBackend, "fsdp": FsdpBackend,
            "deepspeed": DeepSpeedBackend}


# ---- training ---------------------------------------------------------------------------------


def evaluate(backend, tokens, context, limit):
    """Mean cross entropy per token over the held-out windows; rank r scores the r-th contiguous
    share, every rank in the same number of forward passes."""
    starts = text_data.eval_windows(tokens, context, limit)
    n, ranks, rank = starts.size, backend.size, backend.rank
    first, last = n * rank // ranks, n * (rank + 1) // ranks
    chunk = backend.micro
    passes = math.ceil(math.ceil(n / ranks) / chunk)
    loss_sum, count = 0.0, 0
    with torch.no_grad():
        for p in range(passes):
            i = min(last, first + p * chunk)
            m = min(chunk, last - i)
            x, y = text_data.windows_at(tokens, context, starts[i:i + m])
            if m == 0:  # a rank with fewer windows still runs the forward (collective)
                x = y = np.zeros((0, context), dtype=np.int64)
            logits = backend.forward(torch.from_numpy(x))
            loss_sum += float(lm_loss(logits, torch.from_numpy(y), reduction="sum"))
            count += m * context
    totals = backend.allreduce_sum([loss_sum, count])
    return totals[0] / totals[1]


def dump_params(path, names, state):
    arrays = {}
    for name in names:
        if name not in state:
            raise RuntimeError(f"--dump-params: the full state has no {name!r} "
                               f"(it has {', '.join(list(state)[:6])}, ...)")
        arrays[name] = state[name].detach().to(torch.float32).cpu().numpy()
    with open(path, "wb") as f:  # a file object: np.savez would append .npz to a name
        np.savez(f, **arrays)


def train(args):
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    cfg = model_config(args)
    # Data and manifest first: bad input fails before any rank talks to the others.
    corpus = text_data.Corpus(args.data_dir)
    text_data.check_fits(corpus.train, cfg.context, "training")
    text_data.check_fits(corpus.valid, cfg.context, "held-out")
    manifest = load_manifest(args.manifest, runtime_overrides(args))
    hyper = Hyper(manifest, args)

    torch.manual_seed(args.seed)
    if args.init_on == "meta":
        model = GPT(cfg, device="meta")  # StrataBackend writes it: init=model.initializer(seed)
    else:
        model = GPT(cfg)
        model.init(args.seed)
    names = [name for name, _ in model.named_parameters()]
    n_params = count_parameters(model)

    backend = BACKENDS[args.mode](args, model, manifest, hyper)
    G, micro, accum, world, rank = (backend.global_batch, backend.micro, backend.accumulation,
                                    backend.size, backend.rank)
    T = cfg.context
    steps_per_epoch = args.steps_per_epoch or max(1, corpus.train.size // (G * T))
    total_steps = steps_per_epoch * args.epochs
    if args.max_steps:
        total_steps = min(total_steps, args.max_steps)
    if rank == 0:
        print(f"transformer: mode {args.mode}, {world} ranks, size {args.size}: layers "
              f"{cfg.layers}, d_model {cfg.d_model}, heads {cfg.heads}, context {T}, vocab "
              f"{cfg.vocab}, parameters {n_params:,} (head tied to the token embedding)",
              flush=True)
        print(f"transformer: data {args.data_dir}: {corpus.files} files, {corpus.fortunes} "
              f"fortunes, {corpus.train.size:,} train / {corpus.valid.size:,} held-out tokens; "
              f"global batch {G} sequences = micro {micro} x accumulation {accum} x {world} ranks; "
              f"{steps_per_epoch} steps per epoch, {total_steps} steps; AdamW lr {hyper.lr:g} "
              f"weight_decay {hyper.weight_decay:g}, clipping {hyper.clip:g}", flush=True)

    eval_limit = args.eval_batches * G

    def run_eval(step):
        loss = evaluate(backend, corpus.valid, T, eval_limit)
        if rank == 0:
            print(f"eval step {step} loss {loss:.4f}", flush=True)
        return loss

    last_eval, last_loss = 0, run_eval(0)
    train_seconds, step = 0.0, 0
    for epoch in range(args.epochs):
        epoch_loss, epoch_steps = 0.0, 0
        for _ in range(steps_per_epoch):
            if step >= total_steps:
                break
            start = time.perf_counter()
            x, y = text_data.train_batch(corpus.train, T, args.seed, step, G)
            loss_sum = 0.0
            for m in range(accum):
                first = (m * world + rank) * micro
                xs = torch.from_numpy(np.ascontiguousarray(x[first:first + micro]))
                ys = torch.from_numpy(np.ascontiguousarray(y[first:first + micro]))
                loss_sum += backend.micro_step(xs, ys, m + 1 == accum) * micro
            seconds = time.perf_counter() - start
            train_seconds += seconds
            step += 1
            if backend.global_steps != step:
                raise RuntimeError(f"after {step} steps the {args.mode} optimizer counts "
                                   f"{backend.global_steps}")
            totals = backend.allreduce_sum([loss_sum, micro * accum])
            step_loss = totals[0] / totals[1]
            epoch_loss += step_loss
            epoch_steps += 1
            if rank == 0 and args.log_every and (step % args.log_every == 0 or
                                                 step == total_steps):
                print(f"step {step}/{total_steps}  loss {step_loss:.4f}  seconds {seconds:.3f}  "
                      f"tokens/s {G * T / seconds:.0f}", flush=True)
            if args.eval_every and step % args.eval_every == 0:
                last_eval, last_loss = step, run_eval(step)
        if epoch_steps == 0:
            break
        if last_eval != step:
            last_eval, last_loss = step, run_eval(step)
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs}  step {step}  train_loss "
                  f"{epoch_loss / epoch_steps:.4f}  eval_loss {last_loss:.4f}", flush=True)
        if step >= total_steps:
            break

    # Every rank timed the same steps (each ends in a collective): the mean over ranks.
    seconds = backend.allreduce_sum([train_seconds])[0] / world
    rss = np.zeros(world)
    rss[rank] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    rss = backend.allreduce_sum(rss)
    runtime_peak = None
    if hasattr(backend, "runtime_peak_mib"):
        runtime_peak = np.zeros(2 * world)
        runtime_peak[2 * rank:2 * rank + 2] = backend.runtime_peak_mib()
        runtime_peak = backend.allreduce_sum(runtime_peak)
    if rank == 0:
        rate = step * G * T / seconds if seconds > 0 else 0.0
        print(f"trained {step} steps, {step * G * T:,} tokens in {seconds:.2f} s: tokens/s "
              f"{rate:.0f}", flush=True)
        for r in range(world):
            print(f"rank {r} peak_rss_mib {rss[r]:.1f}", flush=True)
            if runtime_peak is not None:
                print(f"rank {r} runtime_peak_mib {runtime_peak[2 * r]:.1f} model_state "
                      f"{runtime_peak[2 * r + 1]:.1f}", flush=True)
    if args.dump_params is not None:
        state = backend.full_state()  # collective: every rank
        if rank == 0:
            dump_params(args.dump_params, names, state)
    backend.close()
    return 0


def main(argv=None):
    args = parse_args(argv)
    try:
        return train(args)
    except (UsageError, text_data.DataError) as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 2
    except Exception as e:
        if type(e).__name__ != "StrataError":
            raise
        print(f"error: {e}", file=sys.stderr, flush=True)  # the runtime's message says it all
        return 1


if __name__ == "__main__":
    sys.exit(main())
