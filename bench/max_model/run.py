#!/usr/bin/python3
"""The largest transformer that trains 3 steps on this machine at 2 ranks, in memory and on NVMe.

Usage: bench/max_model/run.sh <build-dir>   (see README.md beside this file)

examples/transformer/train.py's GPT with D_MODEL (1024) and HEADS (16), CONTEXT (64) tokens and
BATCH (2) sequences per step, trained STEPS (3) steps at RANKS (2) ranks through Strata's ZeRO
stage 3 (fp32, AdamW, one process group per trial under mpirun), the model built on the meta
device and written group by group (INIT_ON=meta; cpu builds it whole on every rank first). A trial completes when train.py
exits 0 after its steps; a rank killed for memory, any other failure, or RUN_TIMEOUT (1800 s) ends
it as not completed. The layers double from START_LAYERS (4) until a trial fails (or MAX_LAYERS,
1024, is reached), then bisect between the largest that completed and the smallest that failed
until they are within an eighth of each other. Two modes, in this order:
  ram   everything in memory: the parameter, gradient, master and Adam state partitions.
  nvme  ZeRO-Infinity: offload_optimizer and offload_param on nvme under NVME_DIR (default: a
        fresh folder under the build directory), sub_group_size 1e7, read-ahead 2 x 1e7 elements.
Each trial prints its parameters, its exit status, the ranks' peak RSS and the median step time
(steps after the first). Environment: PYTHON (/usr/bin/python3: any Python with torch and numpy),
MODES ("ram nvme"), MPIRUN (mpirun), INIT_ON (meta), the knobs above, and START_LAYERS_RAM,
START_LAYERS_NVME, MAX_LAYERS_RAM, MAX_LAYERS_NVME for one mode.
Last line: headline nvme_params_vs_ram=... largest_params_nvme=... step_seconds_nvme=...
"""
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_env  # noqa: E402
from bench_env import die, env_int  # noqa: E402

bench_env.NAME = "bench/max_model"
TRAIN = os.path.join(ROOT, "examples", "transformer", "train.py")
MANIFEST = os.path.join(ROOT, "examples", "manifests", "zero3.json")

PARAMS = re.compile(r"parameters ([0-9,]+)")
STEP = re.compile(r"^step (\d+)/\d+\s+loss \S+\s+seconds ([0-9.eE+-]+)", re.M)
RSS = re.compile(r"^rank (\d+) peak_rss_mib ([0-9.]+)", re.M)


class Trials:
    def __init__(self, build):
        self.build = os.path.abspath(build)
        self.library = os.path.join(self.build, "lib", "libstrata.so")
        if not os.path.exists(self.library):
            die("%s not found; build the target max_model_bench" % self.library)
        self.python = os.environ.get("PYTHON", "/usr/bin/python3")
        self.ranks, self.steps = env_int("RANKS", 2), env_int("STEPS", 3)
        self.d_model, self.heads = env_int("D_MODEL", 1024), env_int("HEADS", 16)
        self.context, self.batch = env_int("CONTEXT", 64), env_int("BATCH", 2)
        self.start, self.max_layers = env_int("START_LAYERS", 4), env_int("MAX_LAYERS", 1024)
        self.timeout = env_int("RUN_TIMEOUT", 1800)
        self.mpirun = shlex.split(os.environ.get("MPIRUN", "mpirun"))
        self.modes = os.environ.get("MODES", "ram nvme").split()
        for m in self.modes:
            if m not in ("ram", "nvme"):
                die("MODES: unknown %r (want ram and/or nvme)" % m)
        self.nvme_dir = os.environ.get("NVME_DIR", os.path.join(self.build, "max_model_nvme"))
        # meta: no rank ever holds the model whole (strata.torch writes it group by group, as
        # deepspeed.zero.Init builds it partitioned); cpu: built whole on every rank first.
        self.init_on = os.environ.get("INIT_ON", "meta")
        if self.init_on not in ("meta", "cpu"):
            die("INIT_ON: expected meta or cpu, got %r" % self.init_on)

    def patch(self, mode):
        zero = {"stage": 3, "stage3_prefetch_bucket_size": 20_000_000,
                "stage3_max_live_parameters": 100_000_000}
        if mode == "nvme":
            zero.update({
                "sub_group_size": 10_000_000,
                "offload_optimizer": {"device": "nvme", "nvme_path": self.nvme_dir,
                                      "buffer_count": 2},
                "offload_param": {"device": "nvme", "nvme_path": self.nvme_dir,
                                  "buffer_count": 2, "buffer_size": 10_000_000}})
        return {"zero_optimization": zero}

    def trial(self, mode, layers):
        """(completed, parameters, peak RSS MiB, median step seconds, why) of one trial."""
        if mode == "nvme":
            shutil.rmtree(self.nvme_dir, ignore_errors=True)
            os.makedirs(self.nvme_dir)
        threads = max(1, (os.cpu_count() or 1) // self.ranks)
        argv = self.mpirun + [
            "--allow-run-as-root", "--oversubscribe", "-np", str(self.ranks),
            "-x", "STRATA_LIBRARY", "-x", "PYTHONPATH", "-x", "OMP_NUM_THREADS",
            self.python, TRAIN, "--mode", "strata", "--manifest", MANIFEST,
            "--overrides", json.dumps(self.patch(mode)), "--size", "1b",
            "--layers", str(layers), "--d-model", str(self.d_model), "--heads", str(self.heads),
            "--context", str(self.context), "--batch", str(self.batch),
            "--max-steps", str(self.steps), "--eval-batches", "1", "--threads", str(threads),
            "--seed", "1", "--init-on", self.init_on]
        env = dict(os.environ, STRATA_LIBRARY=self.library, OMP_NUM_THREADS=str(threads),
                   PYTHONPATH=os.path.join(ROOT, "sdk", "python"))
        start = time.monotonic()
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, errors="replace", start_new_session=True)
        try:
            out, _ = p.communicate(timeout=self.timeout)
            why = "" if p.returncode == 0 else "exit %d" % p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            out, _ = p.communicate()
            why = "past RUN_TIMEOUT=%d s" % self.timeout
        elapsed = time.monotonic() - start
        steps = [float(s) for n, s in STEP.findall(out) if int(n) > 1]
        params = PARAMS.search(out)
        rss = [float(v) for _, v in RSS.findall(out)]
        done = not why and len(STEP.findall(out)) >= self.steps
        if not why and not done:
            why = "exit 0 without %d steps" % self.steps
        if why:
            tail = [l for l in out.splitlines() if "error" in l.lower() or "killed" in l.lower()]
            why += ": " + (tail[-1][:160] if tail else "no error line (killed for memory?)")
        n = int(params.group(1).replace(",", "")) if params else self.estimate(layers)
        result = (done, n, max(rss) if rss else float("nan"),
                  statistics.median(steps) if steps else float("nan"), why)
        print("%-4s layers %4d  params %14s  %-9s  peak RSS %8.0f MiB  step %8.2f s  (%4.0f s)%s"
              % (mode, layers, "{:,}".format(n), "completed" if done else "FAILED", result[2],
                 result[3], elapsed, "  " + why if why else ""), flush=True)
        return result

    def estimate(self, layers):
        """Parameters train.py would report (its model.py: 12 d^2 + 13 d per block)."""
        d = self.d_model
        return layers * (12 * d * d + 13 * d) + 256 * d + self.context * d + 2 * d

    def largest(self, mode):
        """The largest completed trial (layers, its result, whether MAX_LAYERS cut the search
        short) by doubling then bisecting. START_LAYERS_<MODE> and MAX_LAYERS_<MODE> override the
        common knobs for one mode."""
        best, lo, hi = None, 0, None
        layers = env_int("START_LAYERS_" + mode.upper(), self.start)
        max_layers = env_int("MAX_LAYERS_" + mode.upper(), self.max_layers)
        while layers <= max_layers:
            r = self.trial(mode, layers)
            if not r[0]:
                hi = layers
                break
            best, lo = (layers, r), layers
            layers *= 2
        if best is None:
            die("%s: even %d layers did not complete" % (mode, self.start))
        while hi is not None and hi - lo > max(1, lo // 8):
            mid = (lo + hi) // 2
            r = self.trial(mode, mid)
            if r[0]:
                best, lo = (mid, r), mid
            else:
                hi = mid
        return best + (hi is None,)


def main():
    if len(sys.argv) != 2:
        die("usage: bench/max_model/run.sh <build-dir>")
    t = Trials(sys.argv[1])
    print("max_model: GPT d_model %d, %d heads, context %d, batch %d, %d steps at %d ranks, ZeRO-3 "
          "fp32 AdamW; %s; %.1f GiB of memory" % (
              t.d_model, t.heads, t.context, t.batch, t.steps, t.ranks, " then ".join(t.modes),
              os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30), flush=True)
    found = {mode: t.largest(mode) for mode in t.modes}
    print()
    print("%-5s %8s %16s %14s %12s" % ("mode", "layers", "parameters", "peak RSS MiB", "step s"))
    for mode, (layers, r, capped) in found.items():
        print("%-5s %8d %16s %14.0f %12.2f%s" % (
            mode, layers, "{:,}".format(r[1]), r[2], r[3],
            "  (no trial failed up to MAX_LAYERS: a lower bound)" if capped else ""))
    if "ram" in found and "nvme" in found:
        ram, nvme = found["ram"][1], found["nvme"][1]
        print("headline nvme_params_vs_ram=%.2f largest_params_nvme=%d step_seconds_nvme=%.2f"
              % (nvme[1] / ram[1], nvme[1], nvme[3]))
    else:
        mode, (layers, r, _) = next(iter(found.items()))
        print("headline largest_params_%s=%d step_seconds_%s=%.2f" % (mode, r[1], mode, r[3]))


if __name__ == "__main__":
    main()
