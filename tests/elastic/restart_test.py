"""strata-run --max-restarts with real processes, one mode per ctest test.

  kill_restart  (gloo and mpi, trains): a 4-rank fashion_mnist job whose rank 2 is SIGKILLed after its
                second checkpoint restarts at 3 ranks from that checkpoint and finishes (exit 0);
                its loss log has every step once, and its final parameters equal, bit for bit,
                those of a job started at 3 ranks from the same checkpoint.
  env           (gloo and mpi): every run's STRATA_RESTART_COUNT, STRATA_PREVIOUS_WORLD_SIZE,
                STRATA_FIRST_WORLD_SIZE and WORLD_SIZE; a failed rank's slot is not used again;
                the manifest's batch rules choose the size (3 would break the global batch: 2).
  exhausted     (gloo and mpi): a job that fails on every run ends after --max-restarts restarts
                with the last failure's exit code and says so.
  auto_resume   (gloo and mpi) kill_restart with the manifest's checkpoint block doing the saving
                and resuming, no checkpoint option on the host's command line.
  remap         (gloo) a checkpoint saved at one global batch resumes at another at the same
                sample of its epoch, rounded down to a whole step.
  hostfile      (gloo) the hostfile is read again before a restart.
  unreachable   (gloo) a host whose launch agent cannot connect is dropped from the restart.
  min_np        a restart that would need more slots than are left ends with a message naming
                the hosts that remain.

usage: restart_test.py MODE --run STRATA_RUN --work DIR [--example BIN --data-dir DIR] [--backend B]
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from job_processes import rank_pid


def fail(message):
    print(f"FAIL: {message}", flush=True)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def run_job(argv, timeout=120, **kwargs):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as e:
        fail(f"{' '.join(argv)} did not end within {timeout} s: {e.stderr}")


def write_manifest(a, **batch):
    manifest = {"comm": {"library": f"strata_allreduce_{a.backend}"}, "optimizer": {"type": "AdamW",
                "params": {"lr": 0.001}}, "zero_optimization": {"stage": 0}}
    manifest.update(batch)
    path = os.path.join(a.work, "manifest.json")
    with open(path, "w") as f:
        json.dump(manifest, f)
    return path


# A rank that prints its variables and fails on the first run (rank FAIL_RANK, exit 3).
PROBE = r'''
RANK=${RANK:-$OMPI_COMM_WORLD_RANK}
WORLD_SIZE=${WORLD_SIZE:-$OMPI_COMM_WORLD_SIZE}
echo "probe restart=$STRATA_RESTART_COUNT previous=$STRATA_PREVIOUS_WORLD_SIZE first=$STRATA_FIRST_WORLD_SIZE world=$WORLD_SIZE rank=$RANK dir=$STRATA_CHECKPOINT_DIR"
# The failing rank waits a little, so the others print before the job is ended. With NEW_HOSTFILE,
# it first rewrites the hostfile (an operator removing slots while the job runs).
if [ "$STRATA_RESTART_COUNT" = 0 ] && [ "$RANK" = "$FAIL_RANK" ]; then
  if [ -n "$NEW_HOSTFILE" ]; then echo "$NEW_HOSTFILE" > "$HOSTFILE"; fi
  sleep 1; exit 3
fi
if [ "$ALWAYS_FAIL" = 1 ] && [ "$RANK" = 0 ]; then sleep 1; exit 7; fi
exit 0
'''


def probe_lines(output):
    runs = {}
    for m in re.finditer(r"probe restart=(\d+) previous=(\d+) first=(\d+) world=(\d+) rank=(\d+) dir=(\S*)", output):
        restart, previous, first, world, rank, folder = m.groups()
        runs.setdefault(int(restart), []).append((int(previous), int(first), int(world), int(rank), folder))
    return runs


def elastic_argv(a, np, *extra):
    return [a.run, "--backend", a.backend, "-np", str(np), "--max-restarts", "2",
            "--checkpoint-dir", os.path.join(a.work, "ck"), "--startup-seconds", "0", *extra]


def mode_env(a):
    # train 256 with micro-batch 64: 4 ranks x accumulation 1; 3 ranks cannot keep 256 (64 x 3 does
    # not divide it), 2 can (accumulation 2).
    manifest = write_manifest(a, train_batch_size=256, train_micro_batch_size_per_gpu=64)
    env = dict(os.environ, FAIL_RANK="1")
    r = run_job(elastic_argv(a, 4, "--manifest", manifest, "-x", "FAIL_RANK", "--", "sh", "-c", PROBE), env=env)
    output = r.stdout + r.stderr
    check(r.returncode == 0, f"exit {r.returncode}, expected 0 after one restart:\n{output}")
    runs = probe_lines(output)
    check(sorted(runs) == [0, 1], f"expected runs 0 and 1, got {sorted(runs)}:\n{output}")
    check(sorted(x[3] for x in runs[0]) == [0, 1, 2, 3] and {x[:3] for x in runs[0]} == {(0, 4, 4)},
          f"first run: {runs[0]}")
    check(sorted(x[3] for x in runs[1]) == [0, 1] and {x[:3] for x in runs[1]} == {(4, 4, 2)},
          f"the restart should run 2 ranks (3 breaks the global batch 256 at micro-batch 64), previous 4, "
          f"first 4: {runs[1]}")
    folder = os.path.join(a.work, "ck")
    check(all(x[4] == folder for run in runs.values() for x in run), f"STRATA_CHECKPOINT_DIR is not {folder}")
    check(re.search(r"strata-run: restart 1 of 2 at 2 ranks \(was 4\) after: rank 1 .*exited with code 3"
                    r"|strata-run: restart 1 of 2 at 2 ranks \(was 4\) after: rank 1 failed", r.stderr),
          f"no restart line naming rank 1:\n{r.stderr}")
    print(f"{a.backend}: restarted once, 4 -> 2 ranks, every variable as expected")


def mode_exhausted(a):
    env = dict(os.environ, ALWAYS_FAIL="1")
    r = run_job(elastic_argv(a, 3, "-x", "ALWAYS_FAIL", "--", "sh", "-c", PROBE), env=env)
    output = r.stdout + r.stderr
    check(r.returncode == 7, f"exit {r.returncode}, expected the last failure's 7:\n{output}")
    runs = probe_lines(output)
    check(sorted(runs) == [0, 1, 2], f"expected 3 runs (the first and 2 restarts), got {sorted(runs)}:\n{output}")
    check("no restart left (--max-restarts 2 used)" in r.stderr, f"no 'no restart left' line:\n{r.stderr}")
    # Each failure took rank 0's slot: 3, 2, 1 ranks.
    worlds = [sorted({x[2] for x in runs[k]}) for k in (0, 1, 2)]
    check(worlds == [[3], [2], [1]], f"world sizes per run: {worlds}")
    print(f"{a.backend}: 3 runs (3, 2, 1 ranks), then exit 7 with the last failure's message")


def mode_hostfile(a):
    # The hostfile says 4 slots; while the job runs it is cut to 2, then rank 1 fails: the restart
    # reads it again and runs on the 2 slots less the failed one.
    hostfile = os.path.join(a.work, "hosts.txt")
    with open(hostfile, "w") as f:
        f.write("localhost slots=4\n")
    env = dict(os.environ, FAIL_RANK="1", HOSTFILE=hostfile, NEW_HOSTFILE="localhost slots=2")
    argv = elastic_argv(a, 4, "--hostfile", hostfile, "-x", "FAIL_RANK", "-x", "HOSTFILE", "-x", "NEW_HOSTFILE",
                        "--", "sh", "-c", PROBE)
    r = run_job(argv, env=env)
    output = r.stdout + r.stderr
    check(r.returncode == 0, f"exit {r.returncode}, expected 0:\n{output}")
    runs = probe_lines(r.stdout)
    check(sorted(runs) == [0, 1] and {x[2] for x in runs[1]} == {1},
          f"the restart should run 1 rank (the hostfile's 2 slots less the failed one): {runs}")
    check("hosts left: localhost:1" in r.stderr, f"no 'hosts left: localhost:1':\n{r.stderr}")
    print("the hostfile read again before the restart: 4 -> 1 rank")


def mode_unreachable(a):
    # A host whose launch agent cannot connect is dropped whole; the job restarts on the others.
    argv = [a.run, "--backend", "gloo", "-H", "localhost:2,unreachableB:2", "--launch-agent", a.agent,
            "--max-restarts", "1", "--checkpoint-dir", os.path.join(a.work, "ck"), "--", "sh", "-c", PROBE]
    r = run_job(argv)
    output = r.stdout + r.stderr
    check(r.returncode == 0, f"exit {r.returncode}, expected 0 after the restart:\n{output}")
    check(re.search(r"restart 1 of 1 at 2 ranks \(was 4\) after: host unreachableB \(ranks 2-3\) could not be "
                    r"reached .*; hosts left: localhost:2", r.stderr), f"no restart line dropping unreachableB:\n{r.stderr}")
    runs = probe_lines(r.stdout)
    check(1 in runs and sorted(x[3] for x in runs[1]) == [0, 1], f"the restart's ranks: {runs}")
    print("the unreachable host dropped; restarted on localhost:2")


def mode_min_np(a):
    env = dict(os.environ, FAIL_RANK="2")
    r = run_job(elastic_argv(a, 4, "--min-np", "4", "-x", "FAIL_RANK", "--", "sh", "-c", PROBE), env=env)
    check(r.returncode == 3, f"exit {r.returncode}, expected the failure's 3:\n{r.stderr}")
    check(re.search(r"cannot restart after: .*rank 2.*; --min-np 4 but 3 slots are left \(localhost:3\)", r.stderr),
          f"no message naming the slots left:\n{r.stderr}")
    check(sorted(probe_lines(r.stdout)) == [0], "a restart ran")
    print("--min-np 4 with 3 slots left: no restart, the hosts left named")


STEPS = 80  # the kill comes after step 20: the rest leaves time to find and kill rank 2


def latest_step(folder):
    try:
        with open(os.path.join(folder, "latest")) as f:
            return int(f.read().strip().removeprefix("global_step"))
    except (OSError, ValueError):
        return 0


def mode_kill_restart(a, auto=False):
    folder = os.path.join(a.work, "ck")
    manifest = write_manifest(a, train_batch_size=192, train_micro_batch_size_per_gpu=16)
    loss = os.path.join(a.work, "loss.txt")
    params = os.path.join(a.work, "params.bin")
    train = [a.example, "--data-dir", a.data_dir, "--epochs", "1", "--max-steps", str(STEPS), "--loss-log", loss,
             "--dump-params", params]
    job_manifest = manifest
    if auto:
        # The manifest's checkpoint block saves and resumes (its folder: strata-run's --checkpoint-dir).
        with open(manifest) as f:
            doc = json.load(f)
        doc["checkpoint"] = {"save_every": 10, "auto_resume": True}
        job_manifest = os.path.join(a.work, "auto_manifest.json")
        with open(job_manifest, "w") as f:
            json.dump(doc, f)
    else:
        train += ["--save-dir", folder, "--save-every", "10", "--resume-if-present", folder]
    # slurm_test.py runs the job inside a Slurm allocation: a launcher prefix (salloc ...), its
    # environment, and its own way to find rank 2 (srun's ranks are not strata-run's children).
    prefix, job_env = getattr(a, "prefix", []), getattr(a, "job_env", None)
    find_rank = getattr(a, "find_rank", rank_pid)
    job = subprocess.Popen([*prefix, a.run, "--backend", a.backend, "-np", "4", "--manifest", job_manifest,
                            "--max-restarts", "2", "--checkpoint-dir", folder, "--startup-seconds", "0", "--", *train],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=job_env)
    # The second checkpoint is complete once `latest` names it (its folder appears just before).
    deadline = time.time() + 100
    while latest_step(folder) < 20:
        if job.poll() is not None:
            fail(f"the job ended (exit {job.returncode}) before its second checkpoint:\n{job.stderr.read()}")
        if time.time() > deadline:
            job.kill()
            fail("no second checkpoint within 100 s")
        time.sleep(0.01)
    pid = find_rank(2, os.path.basename(a.example), job.pid)
    try:
        check(pid is not None, "rank 2's process not found (the job may have ended first)")
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        fail("rank 2 ended before it could be killed")
    try:
        out, err = job.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        job.kill()
        fail("the job did not end within 120 s of the kill")
    check(job.returncode == 0, f"exit {job.returncode}, expected 0:\n{out}\n{err}")
    # gloo, mpi, and srun (slurm_test.py) as each names the kill.
    check(re.search(r"strata-run: restart 1 of 2 at 3 ranks \(was 4\) after: rank 2 .*"
                    r"(killed by signal SIGKILL|exited on signal 9|srun: error: .*task 2: Killed)", err),
          f"no restart line:\n{err}")
    resumed = re.search(r"resumed from .*global_step(\d+): global step (\d+)", out)
    check(resumed, f"the restarted job did not resume from a checkpoint:\n{out}")
    tag = int(resumed.group(1))
    check(tag >= 20, f"resumed from global_step{tag}, expected the second checkpoint or a later one")
    with open(loss) as f:
        steps = [int(line.split()[0]) for line in f]
    check(steps == list(range(1, STEPS + 1)), f"the loss log's steps are not 1..{STEPS} once each: {steps}")
    # The same resume, started at 3 ranks by hand.
    reference = os.path.join(a.work, "reference.bin")
    r = run_job([a.run, "--backend", a.backend, "-np", "3", "--manifest", manifest, "--", a.example, "--data-dir",
                 a.data_dir, "--epochs", "1", "--max-steps", str(STEPS), "--resume",
                 os.path.join(folder, f"global_step{tag}"), "--dump-params", reference], timeout=60)
    check(r.returncode == 0, f"the reference job failed: {r.stderr}")
    with open(params, "rb") as f, open(reference, "rb") as g:
        mine, theirs = f.read(), g.read()
    check(len(mine) > 0 and mine == theirs,
          f"the restarted job's parameters ({len(mine)} bytes) differ from a job started at 3 ranks from global_step{tag}")
    if auto:
        check(re.search(r"checkpoint: auto_resume: resumed from \S+/global_step\d+ at global step", out + err),
              "the runtime did not say it resumed")
    print(f"rank 2 killed after global_step20; restarted at 3 ranks from global_step{tag}"
          f"{' (the manifest checkpoint block)' if auto else ''}; steps 1-{STEPS} logged once; "
          f"parameters equal the reference run's")


def mode_auto_resume(a):
    mode_kill_restart(a, auto=True)


def mode_remap(a):
    # A checkpoint saved at global batch 192 resumed at 128 (as when an elastic job's batch changes
    # with its size): 10 steps of 192 samples are 15 of 128; at 160, 12 whole steps and 0 repeated;
    # at 300, 6 steps and 120 samples seen again.
    folder = os.path.join(a.work, "ck")
    manifest = write_manifest(a, train_batch_size=192)
    base = [a.run, "--backend", a.backend, "-np", "2", "--manifest", manifest, "--", a.example, "--data-dir",
            a.data_dir, "--epochs", "1"]
    r = run_job(base + ["--max-steps", "10", "--save-dir", folder, "--save-every", "10"])
    check(r.returncode == 0, f"the first job failed: {r.stderr}")
    for batch, step, repeated in ((128, 15, 0), (160, 12, 0), (300, 6, 120)):
        r = run_job(base + ["--batch", str(batch), "--max-steps", "11", "--resume", folder])
        check(r.returncode == 0, f"the resumed job at batch {batch} failed: {r.stderr}")
        expected = (f"the checkpoint's global batch 192 is {batch} now: its data position maps to step {step} of "
                    f"the epoch ({repeated} samples seen again)")
        check(expected in r.stdout, f"batch {batch}: no line '{expected}':\n{r.stdout}")
    print("the data position maps through the sample count at global batches 128, 160 and 300")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("--run", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--backend", default="gloo")
    parser.add_argument("--example")
    parser.add_argument("--data-dir")
    parser.add_argument("--agent")
    a = parser.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    os.chdir(a.work)
    globals()["mode_" + a.mode](a)


if __name__ == "__main__":
    main()
