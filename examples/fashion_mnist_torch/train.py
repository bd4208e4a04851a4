"""Trains the Fashion-MNIST MLP of examples/fashion_mnist with PyTorch, data-parallel through Strata
(strata.torch.DistributedOptimizer), through torch.distributed's DDP (gloo), as a Horovod script
on strata.horovod, or as a DeepSpeed script on strata.deepspeed, on the same batch split as the C++ host, so that they can be compared step for
step.

  mpirun -np 2 /usr/bin/python3 examples/fashion_mnist_torch/train.py [--mode strata|ddp|horovod|deepspeed]
      [--manifest F] [--overrides JSON] [--batch N] [--max-steps N] [--epochs N] [--seed N]
      [--data-dir D] [--init-params FILE] [--order FILE] [--dump-params FILE] [--threads N]
      [--time-report]

With the manifest's checkpoint block (strata mode), the runtime saves every save_every steps and,
on a restart, resumes from the latest checkpoint; the script keeps its data position in those
checkpoints (the C++ host's host state) and continues from it, skipping and repeating no sample.

strata: the manifest decides everything the runtime does (optimizer, clipping, ZeRO stage,
        precision, comm); this script only runs forward and backward.
ddp:    torch.distributed with gloo (MASTER_ADDR/MASTER_PORT from the environment, default
        127.0.0.1:29500; rank and size from RANK/WORLD_SIZE or Open MPI's OMPI_COMM_WORLD_*),
        DistributedDataParallel, torch.optim.AdamW with the manifest's optimizer parameters and
        clip_grad_norm_(gradient_clipping). fp32 only.
horovod: `import strata.horovod as hvd`: hvd.DistributedOptimizer around the same AdamW, the
        manifest's runtime (its comm plugin) carrying the collectives. fp32 only.
deepspeed: `import strata.deepspeed as deepspeed`: the manifest as the ds_config of
        deepspeed.initialize, engine(x) / engine.backward(loss) / engine.step(); everything the
        manifest says applies, as in strata mode.

The batch split is the C++ host's BatchPlan: an epoch is a permutation of the training set;
optimizer step s trains perm[s*G, (s+1)*G) (G = train_batch_size), cut into accumulation x world
micro-batches, rank r's micro-step m taking micro-batch m*world + r. The tail that does not fill a
global batch is dropped. --order FILE takes the permutations the C++ host wrote with --dump-order;
without it each epoch's permutation comes from numpy (seeded by --seed and the epoch), not the C++
one. --init-params takes a C++ --dump-params/--dump-initial-params file; without it the model is
initialised with the C++ host's distributions from torch's generator (--seed).
"""
import argparse
import contextlib
import json
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import data as fmnist_data  # noqa: E402
from mlp import MLP, dump_cpp_params, load_cpp_params  # noqa: E402

EVAL_CHUNK = 500  # test samples per forward pass, as the C++ host


class UsageError(Exception):
    """Bad input found after argument parsing (a file, a manifest key): exit status 2."""


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
        description="Train the Fashion-MNIST MLP with PyTorch through Strata or DDP")
    p.add_argument("--mode", choices=("strata", "ddp", "horovod", "deepspeed"), default="strata",
                   help="strata: strata.torch.DistributedOptimizer; ddp: torch DDP over gloo; "
                        "horovod: strata.horovod's DistributedOptimizer; deepspeed: "
                        "strata.deepspeed's engine")
    p.add_argument("--manifest", default=default_manifest(),
                   help="Strata manifest (JSON); default $STRATA_MANIFEST or "
                        "examples/manifests/default.json")
    p.add_argument("--overrides", type=json_object, default=None,
                   help="JSON merge patch over the manifest (RFC 7386); --batch is applied over it")
    p.add_argument("--batch", type=positive_int, default=None,
                   help="global batch per optimizer step (overrides train_batch_size)")
    p.add_argument("--max-steps", type=non_negative_int, default=0,
                   help="stop after this many optimizer steps (0: no limit)")
    p.add_argument("--epochs", type=positive_int, default=10, help="passes over the training set")
    p.add_argument("--seed", type=non_negative_int, default=1,
                   help="seed of the initialisation and of the data order without --order/"
                        "--init-params")
    p.add_argument("--data-dir", default=fmnist_data.DEFAULT_DATA_DIR,
                   help="folder with the gzipped idx files")
    p.add_argument("--init-params", metavar="FILE",
                   help="start from these parameters (C++ host's raw float32 layout)")
    p.add_argument("--order", metavar="FILE",
                   help="per-epoch permutations of the training set, raw uint32 (the C++ host's "
                        "--dump-order)")
    p.add_argument("--dump-params", metavar="FILE",
                   help="rank 0 writes the final parameters here (C++ host's raw layout)")
    p.add_argument("--threads", type=positive_int, default=None, help="torch.set_num_threads(N)")
    p.add_argument("--time-report", action="store_true",
                   help="rank 0 prints samples_per_second=<float> over the steps after the first 10")
    return p.parse_args(argv)


# ---- manifest (ddp mode reads it itself) -------------------------------------------------------


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


# ---- data order -------------------------------------------------------------------------------


class EpochOrders:
    def __init__(self, path, count, seed):
        self.path, self.count, self.seed = path, count, seed
        self.orders = None
        if path is not None:
            if not os.path.isfile(path):
                raise UsageError(f"--order {path}: no such file")
            size = os.path.getsize(path)
            if size == 0 or size % (4 * count) != 0:
                raise UsageError(f"--order {path}: {size} bytes is not a whole number of "
                                 f"permutations of {count} uint32 sample indices")
            self.orders = np.fromfile(path, dtype=np.uint32).reshape(-1, count)

    def check_available(self, epochs):
        if self.orders is not None and epochs > self.orders.shape[0]:
            raise UsageError(f"--order {self.path}: holds {self.orders.shape[0]} epoch(s) of "
                             f"order, this run trains {epochs}")

    def __call__(self, epoch):
        if self.orders is None:
            return np.random.default_rng([self.seed, epoch]).permutation(self.count)
        order = self.orders[epoch]
        if not np.array_equal(np.bincount(order, minlength=self.count), np.ones(self.count)):
            raise UsageError(f"--order {self.path}: epoch {epoch + 1} is not a permutation of "
                             f"0..{self.count - 1}")
        return order.astype(np.int64)


def epochs_to_run(args, steps_per_epoch):
    if args.max_steps == 0:
        return args.epochs
    return min(args.epochs, math.ceil(args.max_steps / steps_per_epoch))


# ---- the two ways of running data-parallel ----------------------------------------------------


class StrataBackend:
    """Gradients go to the Strata runtime; it reduces, clips and steps."""

    def __init__(self, args, model):
        import strata.torch as st

        self.strata = __import__("strata")
        self.model = model
        self.opt = st.DistributedOptimizer(None, model, manifest=args.manifest,
                                           overrides=runtime_overrides(args))
        rank, size, _, _ = self.opt.world
        self.rank, self.size = rank, size
        t = self.opt.training
        self.global_batch = int(t.train_batch_size)
        self.micro = int(t.micro_batch_size)
        self.accumulation = int(t.gradient_accumulation_steps)
        self.global_steps = 0

    def micro_step(self, x, y, last):
        loss = F.cross_entropy(self.model(x), y)
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

    def allreduce_sum(self, values):
        return self.strata.allreduce(np.asarray(values, dtype=np.float64), op="sum")

    def resumed(self):
        """What the manifest's checkpoint block (auto_resume) loaded at construction, or None."""
        return self.opt.resumed()

    def keep_position(self, state):
        """The data position the manifest's checkpoint block saves with its next checkpoint."""
        self.opt.set_host_state(state)

    def eval_model(self):
        return self.model

    def final_model(self):
        # Collective: the runtime's current values, whole (at ZeRO stage 3 the module itself
        # holds only placeholders between forwards), in a model of the same shape.
        final = MLP(self.model.sizes)
        final.load_state_dict(self.opt.module_state_dict())
        return final

    def close(self):
        self.opt.close()


class DeepSpeedBackend(StrataBackend):
    """A DeepSpeed script on strata.deepspeed (`import strata.deepspeed as deepspeed`): the
    manifest is the ds_config, deepspeed.initialize returns the engine, and each micro-batch is
    engine(x), engine.backward(loss), engine.step(), as DeepSpeed's tutorials train."""

    def __init__(self, args, model):
        import strata
        import strata.deepspeed as deepspeed

        self.strata = strata
        self.model = model
        config = load_manifest(args.manifest, runtime_overrides(args))
        self.engine, _, _, _ = deepspeed.initialize(model=model,
                                                    model_parameters=model.parameters(),
                                                    config=config)
        self.opt = self.engine._opt  # resumed(), set_host_state() and close() as strata mode
        e = self.engine
        self.rank, self.size = e.global_rank, e.world_size
        self.global_batch = e.train_batch_size()
        self.micro = e.train_micro_batch_size_per_gpu()
        self.accumulation = e.gradient_accumulation_steps()
        self.global_steps = 0

    def micro_step(self, x, y, last):
        e = self.engine
        if e.is_gradient_accumulation_boundary() != last:
            raise RuntimeError("engine.is_gradient_accumulation_boundary() disagrees with the "
                               "batch split")
        loss = F.cross_entropy(e(x), y)
        e.backward(loss)
        e.step()
        self.global_steps = e.global_steps
        return float(loss.detach())

    def final_model(self):
        final = MLP(self.model.sizes)
        final.load_state_dict(self.engine.module_state_dict())
        return final

    def close(self):
        self.engine.destroy()


def torch_settings(args, world, mode):
    """What the modes where torch runs the optimizer (ddp, horovod) take from the manifest: the
    batch split, torch.optim.AdamW's arguments and the clipping norm (0: none). fp32 only."""
    manifest = load_manifest(args.manifest, runtime_overrides(args))
    for key in ("fp16", "bf16"):
        if isinstance(manifest.get(key), dict) and manifest[key].get("enabled"):
            raise UsageError(f"--mode {mode}: manifest key {key}.enabled: {mode} mode trains fp32 "
                             f"only")
    if manifest.get("scheduler"):
        raise UsageError(f"--mode {mode}: manifest key scheduler: not supported in {mode} mode")
    split = batch_split(manifest, world)
    optimizer = manifest.get("optimizer") or {}
    kind = str(optimizer.get("type", ""))
    if kind.lower() != "adamw":
        raise UsageError(f"--mode {mode}: manifest optimizer.type {kind!r}: {mode} mode supports "
                         f"AdamW only")
    params = optimizer.get("params") or {}
    adamw = {"lr": float(params.get("lr", 1e-3)),
             "betas": tuple(float(b) for b in params.get("betas", (0.9, 0.999))),
             "eps": float(params.get("eps", 1e-8)),
             "weight_decay": float(params.get("weight_decay", 0.01))}
    clip = manifest.get("gradient_clipping", 0.0)
    return split, adamw, float(clip) if clip else 0.0


class DdpBackend:
    """torch.distributed + DistributedDataParallel + torch.optim.AdamW + clip_grad_norm_."""

    def __init__(self, args, model):
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel

        self.dist = dist
        rank = os.environ.get("RANK", os.environ.get("OMPI_COMM_WORLD_RANK"))
        size = os.environ.get("WORLD_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE"))
        if rank is None or size is None:
            raise UsageError("--mode ddp: no rank and world size in the environment (RANK/"
                             "WORLD_SIZE or OMPI_COMM_WORLD_RANK/SIZE); start it with mpirun or "
                             "strata-run")
        self.rank, self.size = int(rank), int(size)
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29500")
        (self.global_batch, self.micro, self.accumulation), adamw, self.clip = torch_settings(
            args, self.size, "ddp")

        dist.init_process_group("gloo", rank=self.rank, world_size=self.size)
        self.model = model
        self.ddp = DistributedDataParallel(model)  # broadcasts rank 0's parameters
        self.opt = torch.optim.AdamW(model.parameters(), **adamw)
        self.global_steps = 0

    def micro_step(self, x, y, last):
        sync = contextlib.nullcontext() if last else self.ddp.no_sync()
        with sync:
            loss = F.cross_entropy(self.ddp(x), y)
            (loss / self.accumulation).backward()
        if last:
            if self.clip > 0:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
            self.opt.step()
            self.opt.zero_grad()
            self.global_steps += 1
        return float(loss.detach())

    def allreduce_sum(self, values):
        t = torch.tensor(values, dtype=torch.float64)
        self.dist.all_reduce(t)
        return t.numpy()

    def eval_model(self):
        return self.model

    def final_model(self):
        return self.model

    def resumed(self):
        return None  # DDP has no checkpoint block

    def keep_position(self, state):
        pass

    def close(self):
        # DDP first, while its process group still exists, and every rank past its last
        # collective: a DDP torn down after destroy_process_group, with the other rank gone, can
        # hang in its destructor (seen with torch 1.13 and gloo: rank 0 stuck as train() returned).
        self.dist.barrier()
        self.ddp = self.opt = None
        self.dist.destroy_process_group()


class HorovodBackend:
    """A Horovod script on strata.horovod (`import strata.horovod as hvd`): the manifest's runtime
    carries the collectives, torch.optim.AdamW runs on every rank inside hvd.DistributedOptimizer,
    which averages the gradients after the last micro-batch's backward (backward_passes_per_step =
    accumulation); clipping between synchronize() and step(), as Horovod's docs show."""

    def __init__(self, args, model):
        import strata
        import strata.horovod as hvd

        self.hvd = hvd
        strata.init(args.manifest, runtime_overrides(args))  # hvd.init() runs on this runtime
        hvd.init()
        self.rank, self.size = hvd.rank(), hvd.size()
        (self.global_batch, self.micro, self.accumulation), adamw, self.clip = torch_settings(
            args, self.size, "horovod")
        self.model = model
        hvd.broadcast_parameters(model.state_dict(), root_rank=0)
        # No broadcast_optimizer_state: AdamW's state is empty on every rank here, and Horovod's
        # way of filling it (a step with zero gradients) would apply one weight decay.
        self.opt = hvd.DistributedOptimizer(torch.optim.AdamW(model.parameters(), **adamw),
                                            named_parameters=model.named_parameters(),
                                            backward_passes_per_step=self.accumulation)
        self.global_steps = 0

    def micro_step(self, x, y, last):
        loss = F.cross_entropy(self.model(x), y)
        (loss / self.accumulation).backward()
        if last:
            self.opt.synchronize()
            if self.clip > 0:
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
            with self.opt.skip_synchronize():
                self.opt.step()
            self.opt.zero_grad()
            self.global_steps += 1
        return float(loss.detach())

    def allreduce_sum(self, values):
        return self.hvd.allreduce(torch.tensor(values, dtype=torch.float64), op=self.hvd.Sum).numpy()

    def eval_model(self):
        return self.model

    def final_model(self):
        return self.model

    def resumed(self):
        return None  # no checkpoint block: Horovod scripts save with torch.save

    def keep_position(self, state):
        pass

    def close(self):
        self.hvd.shutdown()


# ---- training ---------------------------------------------------------------------------------


def evaluate(backend, model, test):
    """Fraction of the test set classified correctly; rank r scores the r-th contiguous share,
    every rank runs the same number of forward passes (at ZeRO stage 3 each gathers, collectively)."""
    n, ranks, rank = test.count, backend.size, backend.rank
    first, last = n * rank // ranks, n * (rank + 1) // ranks
    passes = math.ceil(math.ceil(n / ranks) / EVAL_CHUNK)
    correct = 0
    with torch.no_grad():
        for p in range(passes):
            i = min(last, first + p * EVAL_CHUNK)
            m = min(EVAL_CHUNK, last - i)
            x, y = test.batch(np.arange(i, i + m))
            logits = model(torch.from_numpy(x))
            correct += int((logits.argmax(dim=1) == torch.from_numpy(y)).sum())
    counts = backend.allreduce_sum([correct, last - first])
    return counts[0] / counts[1]


def resume_position(backend, global_batch, steps_per_epoch):
    """Where the data continues after a checkpoint the manifest's checkpoint block resumed from
    (the C++ host's host state: epoch, step_in_epoch, seed, train_batch_size), as (epoch, step).
    Saved at another global batch, the position maps through the epoch's sample count, rounded
    down to a whole step (those samples are seen again; none is skipped)."""
    resumed = backend.resumed()
    if resumed is None:
        return 0, 0
    extra = resumed.extra
    missing = [k for k in ("epoch", "step_in_epoch", "train_batch_size") if not isinstance(extra.get(k), int)]
    if missing:
        raise UsageError(f"the checkpoint {resumed.tag} has no {', '.join(missing)} in its host state "
                         f"(not saved by a fashion_mnist host?): {extra}")
    epoch, step = extra["epoch"], extra["step_in_epoch"] * extra["train_batch_size"] // global_batch
    if step >= steps_per_epoch:  # a larger batch: the epoch's tail no longer fills a step
        epoch, step = epoch + 1, 0
    backend.global_steps = int(resumed.global_steps)
    if backend.rank == 0:
        print(f"fashion_mnist_torch: resumed from {resumed.tag}: global step {resumed.global_steps}, epoch "
              f"{epoch + 1} step {step}", flush=True)
    return epoch, step


def train(args):
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    # Data first: a missing file fails before any rank talks to the others.
    train_set = fmnist_data.load(args.data_dir, "train")
    test_set = fmnist_data.load(args.data_dir, "test")
    orders = EpochOrders(args.order, train_set.count, args.seed)

    model = MLP((train_set.features, 256, 128, fmnist_data.CLASSES))
    if args.init_params is not None:
        try:
            load_cpp_params(model, args.init_params)
        except (OSError, ValueError) as e:
            raise UsageError(f"--init-params: {e}") from None
    else:
        model.init_like_cpp(args.seed)

    backend = {"strata": StrataBackend, "ddp": DdpBackend, "horovod": HorovodBackend,
               "deepspeed": DeepSpeedBackend}[args.mode](args, model)
    G, micro, accum, world, rank = (backend.global_batch, backend.micro, backend.accumulation,
                                    backend.size, backend.rank)
    steps_per_epoch = train_set.count // G
    if steps_per_epoch == 0:
        raise UsageError(f"{train_set.count} samples cannot fill one global batch of {G}")
    epochs = epochs_to_run(args, steps_per_epoch)
    orders.check_available(epochs)
    if rank == 0:
        print(f"fashion_mnist_torch: mode {args.mode}, {world} ranks, global batch {G} = micro "
              f"{micro} x accumulation {accum} x {world} ranks, {train_set.count} train / "
              f"{test_set.count} test samples", flush=True)

    timed_seconds, timed_steps, step_index = 0.0, 0, 0
    start_epoch, start_step = resume_position(backend, G, steps_per_epoch)
    for epoch in range(start_epoch, epochs):
        start = time.perf_counter()
        order = orders(epoch)
        loss_sum, samples, stop = 0.0, 0, False
        if args.max_steps and backend.global_steps >= args.max_steps:
            break
        for step in range(start_step if epoch == start_epoch else 0, steps_per_epoch):
            step_start = time.perf_counter()
            # Where the data continues after this step: what a checkpoint taken at it keeps.
            after = (epoch, step + 1) if step + 1 < steps_per_epoch else (epoch + 1, 0)
            backend.keep_position({"epoch": after[0], "step_in_epoch": after[1], "seed": args.seed,
                                   "train_batch_size": G})
            for m in range(accum):
                first = step * G + (m * world + rank) * micro
                x, y = train_set.batch(order[first:first + micro])
                loss = backend.micro_step(torch.from_numpy(x), torch.from_numpy(y), m + 1 == accum)
                loss_sum += loss * micro
                samples += micro
            if step_index >= 10:
                timed_seconds += time.perf_counter() - step_start
                timed_steps += 1
            step_index += 1
            if args.max_steps and backend.global_steps >= args.max_steps:
                stop = True
                break
        train_seconds = time.perf_counter() - start
        totals = backend.allreduce_sum([loss_sum, samples])
        accuracy = evaluate(backend, backend.eval_model(), test_set)
        if rank == 0:
            print(f"epoch {epoch + 1}/{args.epochs}  step {backend.global_steps}  train_loss "
                  f"{totals[0] / totals[1]:.4f}  test_acc {accuracy:.4f}  samples/s "
                  f"{totals[1] / train_seconds:.0f}{'  (stopped: --max-steps)' if stop else ''}",
                  flush=True)
        if stop:
            break

    if args.time_report:
        # Every rank timed the same steps (each ends in a collective): the mean over ranks.
        seconds = backend.allreduce_sum([timed_seconds])[0] / world
        if rank == 0:
            rate = timed_steps * G / seconds if timed_steps and seconds > 0 else 0.0
            print(f"timed_steps={timed_steps} seconds={seconds:.6g}", flush=True)
            print(f"samples_per_second={rate:.6g}", flush=True)
    final = backend.final_model()
    if args.dump_params is not None and rank == 0:
        dump_cpp_params(final, args.dump_params)
    backend.close()
    return 0


def main(argv=None):
    args = parse_args(argv)
    try:
        return train(args)
    except (UsageError, fmnist_data.DataError) as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        return 2
    except Exception as e:
        if type(e).__name__ != "StrataError":
            raise
        print(f"error: {e}", file=sys.stderr, flush=True)  # the runtime's message says it all
        return 1


if __name__ == "__main__":
    sys.exit(main())
