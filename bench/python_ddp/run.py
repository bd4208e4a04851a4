#!/usr/bin/python3
"""Python hosts: Strata's DistributedOptimizer against PyTorch DDP (gloo), samples per second.

Usage: /usr/bin/python3 bench/python_ddp/run.py <build-dir> [train.py options, e.g. --data-dir DIR]
(or bench/python_ddp/run.sh <build-dir> ...). See README.md beside this file.

Trains the PyTorch Fashion-MNIST MLP (examples/fashion_mnist_torch/train.py) in two modes with the
same global batch, optimizer, data split and thread count (one thread per rank):
  strata  strata.torch.DistributedOptimizer, the manifest's AdamW, stage 0, the MPI comm plugin;
  ddp     torch.nn.parallel.DistributedDataParallel over gloo, torch.optim.AdamW (the reference,
          measured in the same run).
at 1, 2 and 4 ranks (mpirun for both). One run is one process group of STEPS optimizer steps;
train.py's --time-report prints samples_per_second over the steps after its first 10. After one
warm-up run per mode, ROUNDS rounds each run every configuration, in an order that rotates by
round, so machine noise hits every configuration alike. The table gives per configuration the
median over rounds and (min-max); ratio = strata median / ddp median. When <build>/bin/fashion_mnist
is built (CXX_HOST=auto), the C++ example on the same runtime and manifest runs too, as context:
global batch / its --time-report mean step time.
Last line: headline strata_vs_ddp=<ratio at 2 ranks> strata_vs_ddp_1=<1 rank> strata_vs_ddp_4=<4>.

Environment: ROUNDS (3), STEPS (optimizer steps per run, 200), RANKS ("1 2 4"), MANIFEST
(examples/manifests/default.json), TRAIN_PY (examples/fashion_mnist_torch/train.py), PYTHON
(/usr/bin/python3), RUN_TIMEOUT (seconds per run, 300; then the Python ranks print their stacks
and the bench stops), STRATA_BENCH_MPIRUN_ARGS (extra mpirun options, e.g. "--bind-to none"),
MPIRUN (mpirun), CXX_HOST (auto | 1 | 0: the C++ host column).
Of the train.py options given, --data-dir, --overrides, --batch and --seed also go to the C++ host.
"""

import os
import random
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import bench_env  # noqa: E402
from bench_env import die, env_int  # noqa: E402

bench_env.NAME = "bench/python_ddp"

# The issue's figures for PyTorch DDP (gloo) on this machine with torch 2.15, samples/s: not
# measured by this script (Debian's torch 1.13, or PYTHON's), printed beside this run's DDP figures.
ISSUE_DDP = {1: "81-93k", 2: "34-43k", 4: "18-21k"}

SPS = re.compile(r"samples_per_second=([0-9.eE+-]+)")
CXX_BATCH = re.compile(r"^fashion_mnist: .*global batch (\d+)", re.M)
CXX_WALL = re.compile(r"^step_time .*\bwall=([0-9.eE+-]+)", re.M)


def free_port():
    """A TCP port on 127.0.0.1 nobody listens on, below the kernel's ephemeral range.

    Gloo's connections leave ephemeral ports in TIME_WAIT, and a listening socket cannot take such
    a port; ports below the ephemeral range are not handed out to outgoing connections.
    """
    low = 32768
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    for _ in range(100):
        port = random.randrange(10000, low - 1)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            continue
        finally:
            s.close()
        return port
    die("no free TCP port found for MASTER_PORT")


def children(pid):
    """The processes whose parent is pid (mpirun's ranks on this host)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                stat = f.read()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses; split after the last )
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 1 and fields[1] == str(pid):
            found.append(int(entry))
    return found


class Bench:
    def __init__(self, build, extra):
        self.build = os.path.abspath(build)
        self.extra = extra
        self.python = os.environ.get("PYTHON", "/usr/bin/python3")
        self.train = os.path.abspath(os.environ.get(
            "TRAIN_PY", os.path.join(ROOT, "examples", "fashion_mnist_torch", "train.py")))
        self.manifest = os.path.abspath(os.environ.get(
            "MANIFEST", os.path.join(ROOT, "examples", "manifests", "default.json")))
        self.mpirun = os.environ.get("MPIRUN", "mpirun")
        self.mpirun_extra = shlex.split(os.environ.get("STRATA_BENCH_MPIRUN_ARGS", ""))
        self.timeout = env_int("RUN_TIMEOUT", 300)
        self.library = os.path.join(self.build, "lib", "libstrata.so")
        for path, what, hint in (
                (self.train, "train.py", " (set TRAIN_PY)"),
                (self.manifest, "manifest", " (set MANIFEST)"),
                (self.library, "libstrata.so", "; build the target python_ddp_bench")):
            if not os.path.exists(path):
                die("%s not found: %s%s" % (what, path, hint))
        plugins = os.path.join(self.build, "lib", "strata", "plugins")
        for plugin in ("strata_allreduce_mpi", "strata_zero", "strata_amp", "strata_offload"):
            if not os.path.exists(os.path.join(plugins, "lib%s.so" % plugin)):
                die("plugin lib%s.so not found in %s; build the target python_ddp_bench"
                    % (plugin, plugins))
        self.cxx = os.path.join(self.build, "bin", "fashion_mnist")
        cxx = os.environ.get("CXX_HOST", "auto")
        if cxx not in ("auto", "0", "1"):
            die("CXX_HOST=%r: want auto, 0 or 1" % cxx)
        if cxx == "1" and not os.access(self.cxx, os.X_OK):
            die("CXX_HOST=1 but %s is not built (target fashion_mnist)" % self.cxx)
        self.with_cxx = cxx == "1" or (cxx == "auto" and os.access(self.cxx, os.X_OK))

    def cxx_args(self):
        """The options of self.extra the C++ host shares with train.py, for the 'cxx' mode."""
        shared = ("--data-dir", "--overrides", "--batch", "--seed")
        args, i = [], 0
        while i < len(self.extra):
            a = self.extra[i]
            if a in shared and i + 1 < len(self.extra):
                args += [a, self.extra[i + 1]]
                i += 2
                continue
            if a.split("=", 1)[0] in shared and "=" in a:
                args.append(a)
            i += 1
        return args

    def run(self, mode, np, steps):
        """One process group: returns its samples per second (rank 0's report)."""
        env = dict(os.environ)
        pythonpath = os.path.join(ROOT, "sdk", "python")
        if env.get("PYTHONPATH"):
            pythonpath += os.pathsep + env["PYTHONPATH"]
        env.update({
            "PYTHONPATH": pythonpath,
            "STRATA_LIBRARY": self.library,
            "STRATA_LOG_LEVEL": env.get("STRATA_LOG_LEVEL", "warn"),
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(free_port()),
            "PYTHONFAULTHANDLER": "1",
        })
        forwarded = ["PYTHONPATH", "STRATA_LIBRARY", "STRATA_LOG_LEVEL", "OPENBLAS_NUM_THREADS",
                     "OMP_NUM_THREADS", "MKL_NUM_THREADS", "MASTER_ADDR", "MASTER_PORT",
                     "PYTHONFAULTHANDLER"]
        cmd = [self.mpirun, "--allow-run-as-root", "--oversubscribe",
               "--mca", "btl_vader_single_copy_mechanism", "none"]
        for name in forwarded:
            cmd += ["-x", name]
        cmd += self.mpirun_extra
        cmd += ["-np", str(np)]
        if mode == "cxx":  # the C++ example through the same runtime: context, not the reference
            cmd += [self.cxx, "--manifest", self.manifest, "--time-report", "--time-report-skip",
                    "10", "--epochs", "1000", "--max-steps", str(steps)] + self.cxx_args()
        else:
            cmd += [self.python, self.train, "--mode", mode, "--manifest", self.manifest,
                    "--time-report", "--threads", "1", "--epochs", "1000", "--max-steps",
                    str(steps)] + self.extra
        # Own session, so that a run past RUN_TIMEOUT can be ended with all its processes.
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                universal_newlines=True, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            # Python ranks print their threads' stacks on SIGABRT (PYTHONFAULTHANDLER=1): where
            # each one waits; mpirun then ends the others. Else SIGTERM to mpirun, then SIGKILL.
            ranks = children(proc.pid) if mode != "cxx" else []
            for pid in ranks:
                try:
                    os.kill(pid, signal.SIGABRT)
                except OSError:
                    pass
            out = None
            for sig in ((None,) if ranks else ()) + (signal.SIGTERM, signal.SIGKILL):
                if sig == signal.SIGKILL:
                    os.killpg(proc.pid, signal.SIGKILL)
                elif sig is not None:
                    proc.send_signal(sig)
                try:
                    out, _ = proc.communicate(timeout=15)
                    break
                except subprocess.TimeoutExpired:
                    pass
            die("%s at %d ranks ran past RUN_TIMEOUT=%d s (ended):\n$ %s\n%s"
                % (mode, np, self.timeout, " ".join(map(shlex.quote, cmd)), out))
        finally:
            if proc.poll() is None:  # KeyboardInterrupt and the like: leave no ranks behind
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if mode == "cxx":
            pattern, what = CXX_WALL, "step_time ... wall="
        else:
            pattern, what = SPS, "samples_per_second="
        found = pattern.findall(out)
        if proc.returncode != 0 or len(found) != 1:
            die("%s at %d ranks: exit status %d, %d '%s' lines (want 1):\n$ %s\n%s"
                % (mode, np, proc.returncode, len(found), what, " ".join(map(shlex.quote, cmd)),
                   out))
        if mode == "cxx":  # mean step time over ranks -> global batch (its banner) per second
            batch = CXX_BATCH.findall(out)
            if len(batch) != 1:
                die("cxx at %d ranks: no 'global batch N' banner:\n%s" % (np, out))
            return float(batch[0]) / float(found[0])
        return float(found[0])


def spread(values):
    return "%8.0f (%.0f-%.0f)" % (statistics.median(values), min(values), max(values))


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        ok = len(sys.argv) >= 2
        print(__doc__, file=sys.stdout if ok else sys.stderr)
        sys.exit(0 if ok else 1)
    bench = Bench(sys.argv[1], sys.argv[2:])
    rounds = env_int("ROUNDS", 3)
    steps = env_int("STEPS", 200)
    if steps <= 10:
        die("STEPS=%d: train.py times the steps after its first 10" % steps)
    try:
        ranks = [int(r) for r in os.environ.get("RANKS", "1 2 4").split()]
    except ValueError:
        die("RANKS=%r is not a list of integers" % os.environ.get("RANKS"))
    if not ranks or min(ranks) < 1:
        die("RANKS must list rank counts of at least 1")
    modes = ("strata", "ddp") + (("cxx",) if bench.with_cxx else ())
    configs = [(np, mode) for np in ranks for mode in modes]

    import torch  # only for the header: the torch the ranks run (same interpreter)
    print("python_ddp: %s, %d steps per run (first 10 untimed), %d rounds x %d configurations, "
          "1 thread per rank, torch %s, %d cores"
          % (os.path.basename(bench.manifest), steps, rounds, len(configs), torch.__version__,
             os.cpu_count() or 0))
    sys.stdout.flush()
    for mode in modes:  # warm-up: page cache, the first imports and plugin loads
        bench.run(mode, max(ranks), 20)
    results = {c: [] for c in configs}
    start = time.time()
    for rnd in range(rounds):
        for i in range(len(configs)):
            np, mode = configs[(i + rnd) % len(configs)]
            sps = bench.run(mode, np, steps)
            results[(np, mode)].append(sps)
            print("  round %d: ranks=%d mode=%s samples_per_second=%.1f" % (rnd + 1, np, mode, sps),
                  file=sys.stderr)
    print("(%.0f s; samples/s of the timed steps, median over %d rounds (min-max))"
          % (time.time() - start, rounds))
    print()
    head = "%-5s | %-24s | %-26s | %-6s" % ("ranks", "strata samples/s",
                                           "ddp samples/s (reference)", "ratio")
    if bench.with_cxx:
        head += " | %-24s" % "C++ host via strata"
    print(head + " | issue's DDP, torch 2.15")
    ratio = {}
    for np in ranks:
        s, d = results[(np, "strata")], results[(np, "ddp")]
        ratio[np] = statistics.median(s) / statistics.median(d)
        row = "%-5d | %-24s | %-26s | %6.3f" % (np, spread(s), spread(d), ratio[np])
        if bench.with_cxx:
            row += " | %-24s" % spread(results[(np, "cxx")])
        print(row + " | " + ISSUE_DDP.get(np, "-"))
    print()
    print("ratio = strata median / ddp median: the same runs' global batch, data split, optimizer")
    print("(AdamW, clipping) and threads (1 per rank). The issue's DDP figures (torch 2.15, this")
    print("machine) are not from this run; the torch here is %s." % torch.__version__)
    if bench.with_cxx:
        print("C++ host via strata: examples/fashion_mnist on the same runtime and manifest,")
        print("global batch / mean step time (its --time-report): the runtime without Python.")
    print()
    keys = []
    if 2 in ratio:
        keys.append("strata_vs_ddp=%.4f" % ratio[2])
    keys += ["strata_vs_ddp_%d=%.4f" % (np, ratio[np]) for np in ranks if np != 2]
    print("headline " + " ".join(keys))


if __name__ == "__main__":
    main()
