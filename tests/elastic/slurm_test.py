"""strata-run and srun on a real single-machine Slurm (slurm_cluster.py starts slurmctld, slurmd and
munge for the test and stops them after; without root or the packages the test skips, saying why,
with exit code 77).

  allocation    inside `salloc -n 3`, strata-run with no host option runs 3 ranks in one srun step
                of the allocation (their lines prefixed "[R] "); after rank 1 fails, the restart is a
                new step at 2 ranks; the ranks train to the parameters of strata-run outside Slurm;
                the mpi backend runs on the allocation's 3 slots too.
  kill_restart  restart_test.py's kill_restart inside `salloc -n 4`: rank 2 SIGKILLed after the
                second checkpoint, the job restarts at 3 ranks through new srun steps and ends with
                the parameters of a job started at 3 ranks from the same checkpoint.
  behaviour     on the allocation as elsewhere: the failed rank's exit code is strata-run's, a long
                line stays whole, the ranks' stdin is empty, and SIGTERM or SIGINT to strata-run
                reaches every rank as SIGTERM and ends the job with 128 + the signal.
  direct        `srun -n 3 fashion_mnist ...` with no launcher: the ranks read SLURM_PROCID,
                SLURM_STEP_NUM_TASKS and rank 0's node from the step's node list, and end with the
                parameters of the same job under strata-run; without STRATA_JOB_SECRET they refuse
                to start, saying how to set one.

usage: slurm_test.py --run STRATA_RUN --example FASHION_MNIST --data-dir DIR --work DIR
       [--stops N --proctrack pgid|linuxproc]   (the measurement of process tracking, not the test)
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import restart_test  # noqa: E402
from job_processes import parent_of, slurm_rank_pid  # noqa: E402
from restart_test import check, fail, run_job  # noqa: E402
from slurm_cluster import SlurmCluster  # noqa: E402

STEPS = 12


def manifest(a):
    path = os.path.join(a.work, "manifest.json")
    with open(path, "w") as f:
        json.dump({"comm": {"library": "strata_allreduce_gloo"}, "optimizer": {"type": "AdamW", "params": {"lr": 0.001}},
                   "train_batch_size": 96, "zero_optimization": {"stage": 2}}, f)
    return path


def train_argv(a, params):
    return [a.example, "--data-dir", a.data_dir, "--epochs", "1", "--max-steps", str(STEPS), "--dump-params", params]


def read(path):
    with open(path, "rb") as f:
        return f.read()


def reference_params(a):
    """The parameters of the same job started by strata-run outside Slurm."""
    path = os.path.join(a.work, "reference.bin")
    r = run_job([a.run, "--backend", "gloo", "-np", "3", "--manifest", manifest(a), "--", *train_argv(a, path)],
            timeout=180)
    check(r.returncode == 0, f"the reference job failed: {r.stderr}")
    return read(path)


PROBE = r"""
echo "probe rank=$RANK world=$WORLD_SIZE job=$SLURM_JOB_ID step=$SLURM_STEP_ID restart=$STRATA_RESTART_COUNT"
if [ "$STRATA_RESTART_COUNT" = 0 ] && [ "$RANK" = 1 ]; then sleep 1; exit 3; fi
"""


def mode_allocation(a, cluster, reference):
    r = run_job(["salloc", "-n", "3", a.run, "--backend", "gloo", "--max-restarts", "1", "--checkpoint-dir",
             os.path.join(a.work, "ck"), "--startup-seconds", "0", "--", "sh", "-c", PROBE],
                timeout=180, env=cluster.env())
    check(r.returncode == 0, f"exit {r.returncode}:\n{r.stdout}\n{r.stderr}")
    lines = re.findall(r"^\[(\d+)\] probe rank=(\d+) world=(\d+) job=(\d+) step=(\d+) restart=(\d+)$", r.stdout, re.M)
    runs = {}
    for prefix, rank, world, job, step, restart in lines:
        check(prefix == rank, f"rank {rank}'s line has the prefix [{prefix}]")
        runs.setdefault(int(restart), []).append((int(rank), int(world), job, step))
    check(sorted(runs) == [0, 1], f"expected the first run and one restart:\n{r.stdout}\n{r.stderr}")
    check(sorted(x[0] for x in runs[0]) == [0, 1, 2] and {x[1] for x in runs[0]} == {3},
          f"expected ranks 0-2 of 3 (the allocation's 3 slots) first: {runs[0]}")
    check(sorted(x[0] for x in runs[1]) == [0, 1] and {x[1] for x in runs[1]} == {2},
          f"expected ranks 0-1 of 2 after rank 1's slot was lost: {runs[1]}")
    steps = [{(x[2], x[3]) for x in runs[k]} for k in (0, 1)]
    check(len(steps[0]) == 1 and len(steps[1]) == 1 and steps[0] != steps[1],
          f"expected one srun step per run, a new one for the restart: {steps}")
    check(re.search(r"strata-run: restart 1 of 1 at 2 ranks \(was 3\) after: rank 1 failed \(srun: error: .*task 1: "
                    r"Exited with exit code 3\)", r.stderr), f"no restart line naming rank 1:\n{r.stderr}")
    # The mpi backend gets the same hosts; mpirun starts the ranks (through Slurm where they are remote).
    r = run_job(["salloc", "-n", "3", a.run, "--backend", "mpi", "--", "sh", "-c", "echo mpi rank=$OMPI_COMM_WORLD_RANK"],
            timeout=180, env=cluster.env())
    check(r.returncode == 0 and sorted(re.findall(r"^\[\d+\] mpi rank=(\d+)$", r.stdout, re.M)) == ["0", "1", "2"],
          f"the mpi backend inside the allocation: exit {r.returncode}, expected ranks 0-2:\n{r.stdout}\n{r.stderr}")
    params = os.path.join(a.work, "allocation.bin")
    r = run_job(["salloc", "-n", "3", a.run, "--backend", "gloo", "--manifest", manifest(a), "--",
             *train_argv(a, params)], timeout=180, env=cluster.env())
    check(r.returncode == 0, f"training inside the allocation failed (exit {r.returncode}):\n{r.stderr}")
    check(read(params) == reference, "the parameters trained inside the allocation differ from strata-run's outside")
    print("allocation: 3 ranks from SLURM_TASKS_PER_NODE in one srun step, a new step at 2 ranks after rank 1 "
          "failed; parameters equal strata-run's outside Slurm")


def strata_run_under(launcher_pid):
    """The strata-run that salloc (pid `launcher_pid`) started."""
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[0].endswith(b"strata-run") and parent_of(int(pid)) == launcher_pid:
                    return int(pid)
        except (OSError, ValueError):
            continue
    return None


# The trap leaves a file: after a SIGTERM srun may end before it has passed on the ranks' last lines.
WAIT_FOR_TERM = """trap 'touch "$TRAPPED_DIR/trapped.$RANK"; exit 5' TERM
echo "ready $RANK"
sleep 60 & wait
"""


def stop_with(a, cluster, sig):
    """A stop signal to strata-run on an allocation: every rank gets SIGTERM (its trap runs), and
    strata-run exits with 128 + the signal, without restarting."""
    err_path = os.path.join(a.work, f"stop_{sig.name}.err")
    with open(err_path, "w") as err_file:
        trapped_dir = os.path.join(a.work, f"trapped_{sig.name}")
        shutil.rmtree(trapped_dir, ignore_errors=True)
        os.makedirs(trapped_dir)
        job = subprocess.Popen(["salloc", "-n", "2", a.run, "--backend", "gloo", "--max-restarts", "1",
                                "--checkpoint-dir", os.path.join(a.work, "ck"), "--", "sh", "-c", WAIT_FOR_TERM],
                               env=cluster.env(TRAPPED_DIR=trapped_dir), stdout=subprocess.PIPE, stderr=err_file,
                               text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(job.stdout), daemon=True)
    reader.start()
    deadline = time.time() + 60
    while sum(line.startswith(("[0] ready", "[1] ready")) for line in lines) < 2:
        if time.time() > deadline or job.poll() is not None:
            job.kill()
            fail(f"the ranks did not start: {lines}\n{open(err_path).read()}")
        time.sleep(0.05)
    pid = strata_run_under(job.pid)
    if pid is None:
        job.kill()
        fail("strata-run's process under salloc not found")
    os.kill(pid, sig)
    started = time.time()
    try:
        job.wait(timeout=30)  # the reader thread alone reads stdout
    except subprocess.TimeoutExpired:
        job.kill()
        fail(f"strata-run did not end within 30 s of {sig.name}")
    reader.join(5)
    with open(err_path) as f:
        err = f.read()
    seconds = time.time() - started
    check(job.returncode == 128 + sig, f"{sig.name}: exit {job.returncode}, expected {128 + sig}:\n{lines}\n{err}")
    err += f"(ended {seconds:.2f} s after {sig.name})"
    trapped = sorted(os.listdir(trapped_dir))
    check(trapped == ["trapped.0", "trapped.1"], f"{sig.name}: the ranks whose SIGTERM trap ran: {trapped}\n{lines}\n{err}")
    check("restart" not in err, f"{sig.name}: strata-run restarted after being told to stop:\n{err}")
    return seconds


def mode_behaviour(a, cluster):
    # The first failed rank's exit code is the job's (srun's own would be 143: it SIGTERMs the rest).
    # Rank 0 would sleep 60 s: the failure must end the step (SIGTERM to the others), not wait for it.
    started = time.time()
    r = run_job(["salloc", "-n", "2", a.run, "--backend", "gloo", "--", "sh", "-c",
             'if [ "$RANK" = 1 ]; then sleep 0.5; exit 7; fi; sleep 60'], timeout=180, env=cluster.env())
    check(r.returncode == 7, f"rank 1 exited 7: strata-run exit {r.returncode}, expected 7:\n{r.stderr}")
    check(time.time() - started < 30, f"the job took {time.time() - started:.0f} s: rank 1's failure did not end rank 0")
    # A long line stays one line (srun sends it in 1024-byte pieces); the ranks' stdin is empty.
    r = run_job(["salloc", "-n", "2", a.run, "--backend", "gloo", "--", "sh", "-c",
                 'printf "%05000d\\n" 0; if read x; then echo "stdin $x"; else echo "stdin none"; fi'],
                input="hello\n", env=cluster.env())
    check(r.returncode == 0, f"exit {r.returncode}:\n{r.stderr}")
    for rank in (0, 1):
        check(f"[{rank}] " + "0" * 5000 + "\n" in r.stdout, f"rank {rank}'s 5000-character line is not one line:\n"
              + "\n".join(line[:80] for line in r.stdout.splitlines()))
        check(f"[{rank}] stdin none" in r.stdout, f"rank {rank} read strata-run's stdin:\n{r.stdout[-500:]}")
    seconds = [stop_with(a, cluster, sig) for sig in (signal.SIGTERM, signal.SIGINT)]
    print(f"behaviour: exit code 7 of the failed rank; a 5000-character line whole; stdin empty; SIGTERM and SIGINT "
          f"reach every rank as SIGTERM (ended in {seconds[0]:.1f} s and {seconds[1]:.1f} s), exit 143 and 130")


def count_missed_stops(a, cluster):
    missed = 0
    for i in range(a.stops):
        try:
            stop_with(a, cluster, signal.SIGINT if i % 2 else signal.SIGTERM)
        except SystemExit:  # stop_with's fail(): a rank's trap did not run
            missed += 1
    print(f"stops: {missed} of {a.stops} missed a rank's SIGTERM trap (proctrack/{a.proctrack})")


def mode_kill_restart(a, cluster):
    name = "strata-kill-restart"
    args = types.SimpleNamespace(**vars(a))
    args.work = os.path.join(a.work, "kill_restart")
    args.backend = "gloo"
    os.makedirs(args.work)
    args.prefix = ["salloc", "-n", "4", "-J", name]
    args.job_env = cluster.env()

    def find_rank(rank, program, _launcher_pid):
        job = subprocess.run(["squeue", "-h", "-n", name, "-o", "%i"], capture_output=True, text=True,
                             env=cluster.env()).stdout.split()
        return slurm_rank_pid(rank, program, job[0]) if job else None

    args.find_rank = find_rank
    restart_test.mode_kill_restart(args)


def mode_direct(a, cluster, reference):
    secret = os.urandom(32).hex()
    params = os.path.join(a.work, "direct.bin")
    env = cluster.env(STRATA_MANIFEST=manifest(a), STRATA_JOB_SECRET=secret)
    r = run_job(["srun", "-n", "3", *train_argv(a, params)], timeout=180, env=env)
    check(r.returncode == 0, f"srun -n 3 failed (exit {r.returncode}):\n{r.stdout}\n{r.stderr}")
    check(read(params) == reference, "the parameters of the srun-started ranks differ from strata-run's")
    del env["STRATA_JOB_SECRET"]
    r = run_job(["srun", "-n", "2", *train_argv(a, params)], timeout=60, env=env)
    check(r.returncode != 0 and "export STRATA_JOB_SECRET=$(openssl rand -hex 32) before srun" in r.stderr,
          f"without a secret: exit {r.returncode}, expected a failure saying how to set one:\n{r.stderr}")
    print("direct: srun -n 3 trains with Slurm's variables (parameters equal strata-run's); no secret: refused")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--run", required=True)
    parser.add_argument("--example", required=True)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--work", required=True)
    # A measurement, not the test: N stops (SIGTERM and SIGINT in turn) on a cluster with this
    # process tracking, counting those where a rank's SIGTERM trap did not run.
    parser.add_argument("--stops", type=int, default=0)
    parser.add_argument("--proctrack", default="pgid", choices=["pgid", "linuxproc"])
    a = parser.parse_args()
    for name in ("run", "example", "data_dir", "work"):
        setattr(a, name, os.path.abspath(getattr(a, name)))
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    os.chdir(a.work)
    cluster = SlurmCluster(os.path.join(a.work, "slurm"), proctrack=a.proctrack)
    why = cluster.start()
    if why:
        print(f"SKIP: no Slurm cluster on this machine: {why}")
        sys.exit(77)
    try:
        if a.stops:
            return count_missed_stops(a, cluster)
        reference = reference_params(a)
        mode_allocation(a, cluster, reference)
        mode_direct(a, cluster, reference)
        mode_behaviour(a, cluster)
        mode_kill_restart(a, cluster)
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
