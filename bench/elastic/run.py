"""bench/elastic: recovery time and redone steps of a job restarted after a rank is killed.

Each round starts a 4-rank fashion_mnist job (global batch 192 = micro-batch 16 x accumulation x
ranks, so 3 ranks keep it) under strata-run --max-restarts 1 --checkpoint-dir, saving every 10
steps and resuming with --resume-if-present. The bench follows the loss log (rank 0 flushes one
line per step), kills a random rank (1-3) at a random step, and measures:
  start_s     launch to the first step of the first run: a cold start, the reference
  recovery_s  the kill to the first step of the restarted run
  lost_steps  the last step logged before the kill minus the step the restart resumed from
Run by run.sh; prints a table and ends with the headline (the worst round of each).
"""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import bench_env  # noqa: E402

# The test's helper that finds a rank's process among one job's descendants.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "elastic"))
from job_processes import rank_pid  # noqa: E402

bench_env.NAME = "bench/elastic"
SAVE_EVERY = 10
MAX_STEPS = 150


def logged_steps(path):
    """The steps in the loss log and the time it was last written (None: no file yet)."""
    try:
        with open(path) as f:
            steps = [int(line.split()[0]) for line in f if len(line.split()) == 2]
        return steps, os.stat(path).st_mtime
    except (OSError, ValueError):
        return [], None


class Output:
    """The job's merged output, each line with the wall-clock time it arrived."""

    def __init__(self, stream):
        self.lines = []
        self.thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.thread.start()

    def _read(self, stream):
        for line in stream:
            self.lines.append((time.time(), line))

    def find(self, pattern):
        for when, line in list(self.lines):
            m = re.search(pattern, line)
            if m:
                return when, m
        return None

    def text(self):
        return "".join(line for _, line in self.lines)


def wait_until(job, output, condition, what, timeout=300):
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if job.poll() is not None:
            time.sleep(0.2)
            result = condition()
            if result:
                return result
            bench_env.die(f"the job ended (exit {job.returncode}) before {what}:\n{output.text()[-3000:]}")
        if time.monotonic() > deadline:
            job.kill()
            bench_env.die(f"no {what} within {timeout} s")
        time.sleep(0.002)


def one_round(a, rng, work):
    folder = os.path.join(work, "ck")
    loss = os.path.join(work, "loss.txt")
    manifest = os.path.join(work, "manifest.json")
    with open(manifest, "w") as f:
        json.dump({"comm": {"library": f"strata_allreduce_{a.backend}"}, "train_batch_size": 192,
                   "train_micro_batch_size_per_gpu": 16, "zero_optimization": {"stage": 0},
                   "optimizer": {"type": "AdamW", "params": {"lr": 0.001}}}, f)
    kill_at = rng.randint(SAVE_EVERY + 1, MAX_STEPS - 2 * SAVE_EVERY)
    victim = rng.randint(1, 3)
    launched = time.time()
    job = subprocess.Popen([os.path.join(a.build, "bin", "strata-run"), "--backend", a.backend, "-np", "4",
                            "--manifest", manifest, "--max-restarts", "1", "--checkpoint-dir", folder,
                            "--startup-seconds", "0", "--", os.path.join(a.build, "bin", "fashion_mnist"),
                            "--epochs", "1", "--max-steps", str(MAX_STEPS), "--save-dir", folder,
                            "--save-every", str(SAVE_EVERY), "--resume-if-present", folder, "--loss-log", loss],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=work)
    output = Output(job.stdout)

    def first_step():
        steps, written = logged_steps(loss)
        return written if steps else None

    started = wait_until(job, output, first_step, "the first step")
    wait_until(job, output, lambda: len(logged_steps(loss)[0]) >= kill_at, f"step {kill_at}")
    pid = rank_pid(victim, "fashion_mnist", job.pid)
    if pid is None:
        bench_env.die(f"rank {victim}'s process not found")
    old_inode = os.stat(loss).st_ino
    os.kill(pid, signal.SIGKILL)
    killed = time.time()
    # The restarted rank 0 replaces the log (a new file: the steps up to its checkpoint), then
    # appends. Every look at the log is kept; which one first shows a step of the new run is decided
    # once the resumed step is known.
    looks = []
    while job.poll() is None:
        if time.time() > killed + 300:
            job.kill()
            bench_env.die("the restarted job did not end within 300 s of the kill")
        try:
            inode = os.stat(loss).st_ino
        except OSError:
            inode = None
        steps, _ = logged_steps(loss)
        looks.append((time.time(), inode, steps[-1] if steps else 0))
        time.sleep(0.002)
    if job.returncode != 0:
        bench_env.die(f"the job failed after its restart (exit {job.returncode}):\n{output.text()[-3000:]}")
    output.thread.join(timeout=10)
    resumed = output.find(r"resumed from \S+: global step (\d+)")
    if resumed is None:
        bench_env.die(f"the job did not resume from a checkpoint:\n{output.text()[-3000:]}")
    resumed_step = int(resumed[1].group(1))
    step_at_kill = max([last for _, inode, last in looks if inode == old_inode] or [kill_at])
    new_steps = [when for when, inode, last in looks if inode not in (None, old_inode) and last > resumed_step]
    if not new_steps:
        bench_env.die("no step of the restarted run was seen in the loss log")
    recovered = new_steps[0]
    steps, _ = logged_steps(loss)
    if steps != list(range(1, MAX_STEPS + 1)):
        bench_env.die(f"the loss log does not hold steps 1-{MAX_STEPS} once each")
    return {"kill_at": step_at_kill, "victim": victim, "start_s": started - launched,
            "recovery_s": recovered - killed, "resumed": resumed_step, "lost_steps": step_at_kill - resumed_step}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backend", default="gloo", choices=["gloo", "mpi"])
    a = parser.parse_args()
    a.build = os.path.abspath(a.build)
    rng = random.Random(a.seed)
    print(f"bench/elastic: 4 ranks ({a.backend}), save every {SAVE_EVERY} steps, {MAX_STEPS} steps, "
          f"{a.rounds} rounds, seed {a.seed}")
    print(f"{'round':>5} {'killed':>8} {'at step':>8} {'resumed':>8} {'lost_steps':>10} {'start_s':>8} "
          f"{'recovery_s':>10}")
    rounds = []
    for i in range(a.rounds):
        with tempfile.TemporaryDirectory(prefix="strata-elastic-bench.") as work:
            r = one_round(a, rng, work)
        rounds.append(r)
        print(f"{i + 1:>5} {'rank ' + str(r['victim']):>8} {r['kill_at']:>8} {r['resumed']:>8} "
              f"{r['lost_steps']:>10} {r['start_s']:>8.2f} {r['recovery_s']:>10.2f}", flush=True)
    print(f"load after: {open('/proc/loadavg').read().split()[:3]}")
    print(f"headline recovery_seconds={max(r['recovery_s'] for r in rounds):.2f} "
          f"lost_steps={max(r['lost_steps'] for r in rounds)} "
          f"start_seconds={max(r['start_s'] for r in rounds):.2f} save_every={SAVE_EVERY}")


if __name__ == "__main__":
    main()
