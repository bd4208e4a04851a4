#!/usr/bin/python3
"""A transformer language model through Strata's ZeRO stages 0-3 against PyTorch DDP, PyTorch FSDP
(FULL_SHARD) and DeepSpeed ZeRO-3, on the CPU: tokens per second and per-rank peak RSS.

Usage: bench/transformer/run.sh <build-dir>   (see README.md beside this file)

Every configuration trains examples/transformer/train.py's GPT (--size, default 100m: 16 layers,
d_model 768, 114 M parameters) with the same initial values, the same global batches and the same
AdamW, one process group per run under mpirun, in one Python environment (PYTHON: a venv with
PyPI's torch 2.x, deepspeed and numpy; torch's import alone costs ~300 MiB more RSS in 2.x than in
Debian's 1.13, so every column must use the same torch). Strata runs with the binding from this
tree (PYTHONPATH=sdk/python) and the build's libstrata and plugins.

Per run: STEPS optimizer steps; tokens/s = global tokens per step / the median step time of the
steps after the first (the first records stage 3's gather order, and allocates the optimizer
state); peak RSS = the largest ru_maxrss over the ranks. ROUNDS rounds each run every
configuration, in an order that rotates by round; the table gives medians over rounds and
(min-max).

Environment: PYTHON (required unless /tmp/strata-bench-venv/bin/python exists), ROUNDS (1),
STEPS (4), RANKS ("2 4"), SIZE (100m), CONTEXT (256), BATCH (global sequences per step, 4),
PRECISION (fp32 | bf16: Strata's stages; the peers stay fp32), MODES (all of: strata0 strata1
strata2 strata3 ddp fsdp deepspeed), PREFETCH (stage3_prefetch_bucket_size of Strata's stage 3 and
DeepSpeed's, elements, 1e7: about one and a half layers of the 100m model), MAX_LIVE and REUSE
(stage3_max_live_parameters and stage3_max_reuse_distance of both, 2e7 and 1e7 elements: DeepSpeed's
defaults, 1e9, keep a 100 M-parameter model gathered whole from forward to backward), LEAF_BLOCKS
(1: Strata's and DeepSpeed's ZeRO gather each transformer block as one unit, train.py
--leaf-blocks, as FSDP's wrapping of each block does; 0: per module), RUN_TIMEOUT (seconds per
run, 900), MPIRUN (mpirun).
Last line: headline zero3_rss_vs_ddp=... rss_vs_deepspeed_zero3=... tokens_vs_deepspeed_zero3=...
tokens_vs_fsdp=... zero3_vs_stage0_tokens=... (at the largest RANKS; goals in the README).
"""
import json
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_env  # noqa: E402
from bench_env import die, env_int  # noqa: E402

bench_env.NAME = "bench/transformer"
TRAIN = os.path.join(ROOT, "examples", "transformer", "train.py")
DEFAULT_MANIFEST = os.path.join(ROOT, "examples", "manifests", "default.json")
ZERO3_MANIFEST = os.path.join(ROOT, "examples", "manifests", "zero3.json")
ALL_MODES = ("strata0", "strata1", "strata2", "strata3", "ddp", "fsdp", "deepspeed")

STEP = re.compile(r"^step (\d+)/\d+\s+loss \S+\s+seconds ([0-9.eE+-]+)", re.M)
RSS = re.compile(r"^rank (\d+) peak_rss_mib ([0-9.]+)", re.M)
LOSS = re.compile(r"^step (\d+)/\d+\s+loss (\S+)", re.M)


class Bench:
    def __init__(self, build):
        self.build = os.path.abspath(build)
        self.python = os.environ.get("PYTHON", "")
        if not self.python and os.path.exists("/tmp/strata-bench-venv/bin/python"):
            self.python = "/tmp/strata-bench-venv/bin/python"
        if not self.python:
            die("set PYTHON to a Python with PyPI's torch 2.x, deepspeed and numpy (README.md)")
        self.library = os.path.join(self.build, "lib", "libstrata.so")
        if not os.path.exists(self.library):
            die("%s not found; build the targets strata, strata_allreduce_mpi, strata_zero, "
                "strata_amp, strata_offload" % self.library)
        self.rounds, self.steps = env_int("ROUNDS", 1), env_int("STEPS", 4)
        self.ranks = [int(r) for r in os.environ.get("RANKS", "2 4").split()]
        self.size = os.environ.get("SIZE", "100m")
        self.context, self.batch = env_int("CONTEXT", 256), env_int("BATCH", 4)
        self.precision = os.environ.get("PRECISION", "fp32")
        if self.precision not in ("fp32", "bf16"):
            die("PRECISION=%r: want fp32 or bf16" % self.precision)
        self.modes = os.environ.get("MODES", " ".join(ALL_MODES)).split()
        for m in self.modes:
            if m not in ALL_MODES:
                die("MODES: unknown %r (want some of %s)" % (m, " ".join(ALL_MODES)))
        self.timeout = env_int("RUN_TIMEOUT", 900)
        self.prefetch = env_int("PREFETCH", 10_000_000)
        self.max_live = env_int("MAX_LIVE", 20_000_000)
        self.reuse = env_int("REUSE", 10_000_000)
        leaf = env_int("LEAF_BLOCKS", 1, minimum=0)
        if leaf > 1:
            die("LEAF_BLOCKS=%d: want 0 or 1" % leaf)
        self.leaf_blocks = leaf == 1
        self.mpirun = shlex.split(os.environ.get("MPIRUN", "mpirun"))
        self.cores = os.cpu_count() or 1

    def command(self, mode, ranks):
        threads = max(1, self.cores // ranks)
        args = [self.python, TRAIN, "--size", self.size, "--context", str(self.context),
                "--batch", str(self.batch), "--max-steps", str(self.steps), "--eval-batches",
                "1", "--threads", str(threads), "--seed", "1"]
        # Stage 3 (Strata's and DeepSpeed's) prefetches PREFETCH elements ahead and keeps at most
        # MAX_LIVE gathered, REUSE for a group used again soon: DeepSpeed's defaults (5e7, 1e9,
        # 1e9) would hold a 114 M-parameter model gathered whole between forward and backward.
        stage3 = {"stage3_prefetch_bucket_size": self.prefetch,
                  "stage3_max_live_parameters": self.max_live,
                  "stage3_max_reuse_distance": self.reuse}
        if self.leaf_blocks and (mode.startswith("strata") or mode == "deepspeed"):
            args.append("--leaf-blocks")
        if mode.startswith("strata"):
            patch = {"zero_optimization": dict(stage3 if mode == "strata3" else {},
                                               stage=int(mode[-1]))}
            if self.precision == "bf16":
                patch["bf16"] = {"enabled": True}
            args += ["--mode", "strata", "--manifest", DEFAULT_MANIFEST,
                     "--overrides", json.dumps(patch)]
        elif mode == "deepspeed":
            args += ["--mode", "deepspeed", "--manifest", ZERO3_MANIFEST,
                     "--overrides", json.dumps({"zero_optimization": stage3})]
        else:
            args += ["--mode", mode, "--manifest", DEFAULT_MANIFEST]
        return self.mpirun + ["--allow-run-as-root", "--oversubscribe", "-np", str(ranks),
                              "-x", "STRATA_LIBRARY", "-x", "PYTHONPATH", "-x", "MASTER_PORT",
                              "-x", "OMP_NUM_THREADS"] + args

    def run(self, mode, ranks, port):
        env = dict(os.environ, STRATA_LIBRARY=self.library,
                   PYTHONPATH=os.path.join(ROOT, "sdk", "python"), MASTER_PORT=str(port),
                   OMP_NUM_THREADS=str(max(1, self.cores // ranks)))
        argv = self.command(mode, ranks)
        start = time.monotonic()
        # Its own process group, so that a run past its time ends with every rank.
        r = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, errors="replace", start_new_session=True)
        try:
            out, _ = r.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(r.pid, signal.SIGKILL)
            r.communicate()
            die("%s at %d ranks ran past RUN_TIMEOUT=%d s: %s" % (mode, ranks, self.timeout,
                                                                shlex.join(argv)))
        if r.returncode != 0:
            tail = "\n".join(out.splitlines()[-30:])
            die("%s at %d ranks failed (exit %d):\n$ %s\n%s" % (mode, ranks, r.returncode,
                                                                 shlex.join(argv), tail))
        times = [float(s) for n, s in STEP.findall(out) if int(n) > 1]
        rss = [float(v) for _, v in RSS.findall(out)]
        if not times or len(rss) != ranks:
            die("%s at %d ranks: no step times or per-rank RSS in its output:\n%s"
                % (mode, ranks, out[-3000:]))
        losses = [s for _, s in LOSS.findall(out)]
        tokens = self.batch * self.context / statistics.median(times)
        print("  %-9s %d ranks: %8.1f tokens/s  peak RSS %7.0f MiB  (%.0f s; losses %s)"
              % (mode, ranks, tokens, max(rss), time.monotonic() - start, " ".join(losses)),
              flush=True)
        return tokens, max(rss)

    def main(self):
        print("bench/transformer: size %s, context %d, global batch %d, %d steps, %s, ranks %s, "
              "%d rounds, %d cores, python %s" % (self.size, self.context, self.batch,
                                                  self.steps, self.precision, self.ranks,
                                                  self.rounds, self.cores, self.python), flush=True)
        results = {}
        port = 29600
        for rnd in range(self.rounds):
            order = self.modes[rnd % len(self.modes):] + self.modes[:rnd % len(self.modes)]
            print("round %d" % (rnd + 1), flush=True)
            for ranks in self.ranks:
                for mode in order:
                    port += 1
                    results.setdefault((mode, ranks), []).append(self.run(mode, ranks, port))
        print("\n%-10s %5s %22s %22s" % ("mode", "ranks", "tokens/s median (range)",
                                         "peak RSS MiB (range)"))
        med = {}
        for (mode, ranks), runs in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
            tok = [t for t, _ in runs]
            rss = [r for _, r in runs]
            med[(mode, ranks)] = (statistics.median(tok), statistics.median(rss))
            print("%-10s %5d %10.1f (%.1f-%.1f) %10.0f (%.0f-%.0f)"
                  % (mode, ranks, med[(mode, ranks)][0], min(tok), max(tok),
                     med[(mode, ranks)][1], min(rss), max(rss)))
        n = max(self.ranks)

        def ratio(a, b, i):
            if (a, n) not in med or (b, n) not in med:
                return "n/a"
            return "%.3g" % (med[(a, n)][i] / med[(b, n)][i])
        print("\nat %d ranks: goals zero3_rss_vs_ddp <= 0.45, rss_vs_deepspeed_zero3 <= 0.6, "
              "tokens_vs_deepspeed_zero3 >= 2.5, tokens_vs_fsdp >= 1.5, zero3_vs_stage0_tokens "
              ">= 0.8" % n)
        print("headline zero3_rss_vs_ddp=%s rss_vs_deepspeed_zero3=%s tokens_vs_deepspeed_zero3=%s "
              "tokens_vs_fsdp=%s zero3_vs_stage0_tokens=%s"
              % (ratio("strata3", "ddp", 1), ratio("strata3", "deepspeed", 1),
                 ratio("strata3", "deepspeed", 0), ratio("strata3", "fsdp", 0),
                 ratio("strata3", "strata0", 0)), flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        die("usage: bench/transformer/run.sh <build-dir>")
    Bench(sys.argv[1]).main()
