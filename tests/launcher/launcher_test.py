#!/usr/bin/env python3
"""Process tests of strata-run with real processes (rank_probe), one mode per ctest test.

usage: launcher_test.py MODE --run STRATA_RUN --probe RANK_PROBE --agent FAKE_AGENT --work DIR
                        [--version-text X.Y.Z]
"""
import argparse
import os
import pty
import re
import signal
import subprocess
import sys
import threading
import time

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


class Job:
    """strata-run running in the background; its stdout and stderr are collected line by line."""

    def __init__(self, argv, cwd, env=None, slow_stdout=False):
        """slow_stdout: read stdout at about 1 MB/s until read_stdout_fast() (a slow terminal)."""
        print("running: " + " ".join(argv), flush=True)
        self.started = time.monotonic()
        self.proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self.out, self.err = [], []
        self.fast = threading.Event()
        if not slow_stdout:
            self.fast.set()
        self.threads = [threading.Thread(target=self._collect, args=(self.proc.stdout, self.out, self.fast)),
                        threading.Thread(target=self._collect, args=(self.proc.stderr, self.err, None))]
        for t in self.threads:
            t.start()

    @staticmethod
    def _collect(stream, lines, fast):
        if fast is None or fast.is_set():
            for line in stream:
                lines.append(line.rstrip("\n"))
            return
        pending = b""
        while True:
            chunk = os.read(stream.fileno(), 16384 if not fast.is_set() else 1 << 20)
            if not chunk:
                break
            *whole, pending = (pending + chunk).split(b"\n")
            lines.extend(line.decode(errors="replace") for line in whole)
            if not fast.is_set():
                time.sleep(0.015)
        if pending:
            lines.append(pending.decode(errors="replace"))

    def read_stdout_fast(self):
        self.fast.set()

    def wait_for(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            if self.proc.poll() is not None:
                time.sleep(0.2)
                if predicate():
                    return
                self.dump()
                fail(f"strata-run ended (code {self.proc.returncode}) before {what}")
            time.sleep(0.05)
        self.dump()
        fail(f"timed out waiting for {what}")

    def finish(self, timeout):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            self.dump()
            fail(f"strata-run did not end within {timeout} s")
        for t in self.threads:
            t.join()
        self.elapsed = time.monotonic() - self.started
        self.dump()
        return self.proc.returncode

    def dump(self):
        print("---- stdout\n" + "\n".join(self.out[:200]))
        print("---- stderr\n" + "\n".join(self.err[:200]), flush=True)

    def pids(self):
        return [int(m.group(1)) for line in self.out for m in [re.match(r"^\[\d+\] pid=(\d+)$", line)] if m]


def rank_vars(lines):
    """{rank: {NAME: value}} from the probes' "[R] NAME=value" lines."""
    ranks = {}
    for line in lines:
        m = re.match(r"^\[(\d+)\] ([A-Z_]+)=(.*)$", line)
        if m:
            ranks.setdefault(int(m.group(1)), {})[m.group(2)] = m.group(3)
    return ranks


def cmdlines():
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    out[int(entry)] = f.read()
            except OSError:
                pass
    return out


def assert_secret_not_on_any_command_line(secret):
    for pid, cmdline in cmdlines().items():
        check(secret.encode() not in cmdline, f"the secret is on the command line of pid {pid}: {cmdline!r}")


def assert_gone(pids, within):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [p for p in pids if os.path.exists(f"/proc/{p}") and not is_zombie(p)]
        if not alive:
            return
        time.sleep(0.1)
    fail(f"ranks still running {within} s after strata-run ended: {alive}")


def is_zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def check_common_env(ranks, world, secret_same=True):
    check(sorted(ranks) == list(range(world)), f"ranks {sorted(ranks)} reported, expected 0..{world - 1}")
    secrets = {v["STRATA_JOB_SECRET"] for v in ranks.values()}
    check(len(secrets) == 1, f"the ranks got different secrets: {secrets}")
    secret = secrets.pop()
    check(HEX64.match(secret), f"the secret is not 64 hex digits: {secret!r}")
    ports = {v["MASTER_PORT"] for v in ranks.values()}
    check(len(ports) == 1 and 0 < int(ports.copy().pop()) < 65536, f"MASTER_PORT differs or is bad: {ports}")
    return secret


def own_library(a):
    """The libstrata beside the strata-run under test (build/bin -> build/lib), which it hands its
    ranks as STRATA_LIBRARY unless the caller chose one."""
    lib = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(a.run))), "lib", "libstrata.so")
    check(os.path.exists(lib), f"no libstrata beside {a.run}: {lib}")
    return os.path.normpath(lib)


def mode_env(a):
    release = os.path.join(a.work, "release")
    manifest = os.path.join(a.work, "manifest.json")
    with open(manifest, "w") as f:
        f.write("{}\n")
    job = Job([a.run, "--backend", "gloo", "-np", "4", "-x", "PROBE_EXTRA=hello world", "--manifest",
               "manifest.json", "--network-interface", "lo", "--", a.probe, "hold=" + release], a.work)
    job.wait_for(lambda: len(job.pids()) == 4, 30, "4 ranks to print their pid")
    ranks = rank_vars(job.out)
    secret = check_common_env(ranks, 4)
    # Checked while every rank, and strata-run, is still running.
    assert_secret_not_on_any_command_line(secret)
    open(release, "w").close()
    check(job.finish(30) == 0, "strata-run did not exit 0")
    for r, v in rank_vars(job.out).items():
        expect = {"RANK": str(r), "LOCAL_RANK": str(r), "WORLD_SIZE": "4", "LOCAL_SIZE": "4",
                  "CROSS_RANK": "0", "CROSS_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
                  "STRATA_MANIFEST": os.path.realpath(manifest), "STRATA_NETWORK_INTERFACE": "lo",
                  "PROBE_EXTRA": "hello world", "OMPI_COMM_WORLD_RANK": "<unset>",
                  "STRATA_COMM_LIBRARY": "strata_allreduce_gloo", "STRATA_LIBRARY": own_library(a)}
        for name, value in expect.items():
            check(v.get(name) == value, f"rank {r}: {name}={v.get(name)!r}, expected {value!r}")
        check(f"[{r}] stderr line from rank {r}" in job.err, f"rank {r}'s stderr line is not prefixed on stderr")
        check(f"[{r}] last line of rank {r}" in job.out, f"rank {r}'s last line without newline was lost")


def mode_prefix(a):
    job = Job([a.run, "--backend", "gloo", "-np", "4", "--", a.probe, "bulk=300"], a.work)
    check(job.finish(60) == 0, "strata-run did not exit 0")
    counts = {}
    for line in job.out:
        m = re.match(r"^\[(\d+)\] (.*)$", line)
        check(m is not None, f"a stdout line without a rank prefix: {line[:80]!r}")
        rank, text = int(m.group(1)), m.group(2)
        if text.startswith("bulk "):
            fields = text.split(" ")
            check(fields[1] == str(rank), f"rank {rank}'s prefix on rank {fields[1]}'s line")
            check(fields[3] == chr(ord("a") + rank) * 3000, f"rank {rank}: a bulk line was cut or mixed")
            counts[rank] = counts.get(rank, 0) + 1
    check(counts == {r: 300 for r in range(4)}, f"bulk lines per rank: {counts}")
    for line in job.err:
        check(re.match(r"^\[\d+\] stderr line from rank \d+$", line), f"unexpected stderr line {line!r}")


def failing_job(a, argv, code, message, within=10.0, min_pids=2):
    job = Job(argv, a.work)
    if min_pids:
        job.wait_for(lambda: len(job.pids()) >= min_pids, 30, "the ranks to start")
    rc = job.finish(30)
    pids = job.pids()
    check(rc == code, f"strata-run exited {rc}, expected {code}")
    check(any(re.search(message, line) for line in job.err), f"no stderr line matches {message!r}")
    check(job.elapsed < within, f"strata-run took {job.elapsed:.1f} s, more than {within} s")
    assert_gone(pids, 5)
    return job


def mode_fail_exit(a):
    failing_job(a, [a.run, "--backend", "gloo", "-np", "4", "--", a.probe, "exit@2=3", "sleep=60"], 3,
                r"^strata-run: rank 2 \(host localhost, pid \d+\) exited with code 3$")


def mode_mpi_fail_exit(a):
    # The mpi backend: mpirun ends the job and strata-run passes on its exit code; mpirun names
    # the rank ("Process name: [[job,1],1]  Exit code: 3").
    job = Job([a.run, "--backend", "mpi", "-np", "3", "--", a.probe, "exit@1=3", "sleep=60"], a.work)
    job.wait_for(lambda: sum("pid=" in line for line in job.out) >= 2, 60, "the MPI ranks to start")
    pids = job.pids()
    rc = job.finish(30)
    check(rc == 3, f"strata-run (mpirun) exited {rc}, expected 3")
    check(job.elapsed < 10, f"strata-run (mpirun) took {job.elapsed:.1f} s, more than 10 s")
    text = "\n".join(job.err + job.out)
    check(re.search(r"Process name: \[\[\d+,\d+\],1\]\s+Exit code:\s+3", text) is not None,
          "mpirun did not name rank 1 and its exit code 3")
    assert_gone(pids, 5)


def mode_fail_signal(a):
    failing_job(a, [a.run, "--backend", "gloo", "-np", "4", "--", a.probe, "kill@1", "sleep=60"], 137,
                r"^strata-run: rank 1 \(host localhost, pid \d+\) killed by signal SIGKILL$")


def mode_fail_stubborn(a):
    # The other ranks ignore SIGTERM: SIGKILL follows after the 3 s grace, within the 10 s.
    job = failing_job(a, [a.run, "--backend", "gloo", "-np", "3", "--", a.probe, "ignore-term", "exit@0=5",
                          "sleep=60"], 5, r"^strata-run: rank 0 \(host localhost, pid \d+\) exited with code 5$")
    check(job.elapsed >= 3, f"strata-run ended after {job.elapsed:.1f} s, before the 3 s grace")


def mode_sigint(a):
    job = Job([a.run, "--backend", "gloo", "-np", "3", "--", a.probe, "sleep=60"], a.work)
    job.wait_for(lambda: len(job.pids()) == 3, 30, "3 ranks to start")
    pids = job.pids()
    job.proc.send_signal(signal.SIGINT)
    sent = time.monotonic()
    rc = job.finish(30)
    check(rc == 130, f"strata-run exited {rc} after SIGINT, expected 130")
    check(time.monotonic() - sent < 10, "strata-run took more than 10 s after SIGINT")
    check("strata-run: got SIGINT, stopping every rank" in job.err, "no message about SIGINT")
    assert_gone(pids, 5)


def mode_launcher_killed(a):
    # strata-run dies without a chance to stop anything: its local ranks die with it (parent-death
    # signal) and the remote ones see their agent's stdin close.
    job = Job([a.run, "--backend", "gloo", "-H", "localhost:2,fakehost2:2", "--launch-agent", a.agent, "--",
               a.probe, "sleep=60"], a.work)
    job.wait_for(lambda: len(job.pids()) == 4, 30, "4 ranks to start")
    pids = job.pids()
    job.proc.kill()
    job.finish(10)
    assert_gone(pids, 8)


def remote_argv(a, hosts, *probe_args):
    return [a.run, "--backend", "gloo", "-H", hosts, "--launch-agent", a.agent, "--", a.probe, *probe_args]


def agent_log_env(a):
    log = os.path.join(a.work, "agent.log")
    return log, dict(os.environ, FAKE_AGENT_LOG=log)


def agent_hosts(log):
    with open(log) as f:
        return sorted(f.read().split())


def mode_remote(a):
    release = os.path.join(a.work, "release")
    log, env = agent_log_env(a)
    job = Job(remote_argv(a, "fakehost1:2,fakehost2:2", "hold=" + release), a.work, env)
    job.wait_for(lambda: len(job.pids()) == 4, 30, "4 ranks to print their pid")
    ranks = rank_vars(job.out)
    secret = check_common_env(ranks, 4)
    # The agent, the remote shells and the ranks are all running now.
    assert_secret_not_on_any_command_line(secret)
    open(release, "w").close()
    check(job.finish(30) == 0, "strata-run did not exit 0")
    for r, v in rank_vars(job.out).items():
        expect = {"RANK": str(r), "LOCAL_RANK": str(r % 2), "WORLD_SIZE": "4", "LOCAL_SIZE": "2",
                  "CROSS_RANK": str(r // 2), "CROSS_SIZE": "2", "MASTER_ADDR": "fakehost1",
                  "MASTER_PORT": "29500", "STRATA_COMM_LIBRARY": "strata_allreduce_gloo"}
        for name, value in expect.items():
            check(v.get(name) == value, f"rank {r}: {name}={v.get(name)!r}, expected {value!r}")
    check(not any("strata-run:started" in line for line in job.out), "the start marker was not consumed")
    check(agent_hosts(log) == ["fakehost1", "fakehost1", "fakehost2", "fakehost2"],
          f"agent started for {agent_hosts(log)}, expected each fake host twice")


def mode_remote_kill(a):
    # The fixture agent runs each rank in its own session, as on another host: only the closed
    # stdin can end rank 0, 1 and 2.
    failing_job(a, remote_argv(a, "fakehost1:2,fakehost2:2", "exit@3=3", "sleep=60"), 3,
                r"^strata-run: rank 3 \(host fakehost2, pid \d+\) exited with code 3$")


def mode_remote_kill_children(a):
    # Each rank is a shell that started the probe in the background: closing the agent's stdin
    # must end the probe too, not just the shell (the remote command kills the program's group).
    script = f"{a.probe} exit@3=3 sleep=60 & wait $!"
    failing_job(a, [a.run, "--backend", "gloo", "-H", "fakehost1:2,fakehost2:2", "--launch-agent", a.agent,
                    "--", "sh", "-c", script], 3,
                r"^strata-run: rank 3 \(host fakehost2, pid \d+\) exited with code 3$")


def mode_unreachable(a):
    job = failing_job(a, remote_argv(a, "localhost:2,unreachableB:2", "sleep=60"), 255,
                      r"^strata-run: host unreachableB \(ranks 2-3\) could not be reached within 30 s: "
                      r"ssh: connect to host unreachableB port 22: Connection refused$", min_pids=0)
    check(not any("rank 0 " in line or "rank 1 " in line for line in job.err), "a killed local rank was reported")


def mode_connect_timeout(a):
    job = Job([a.run, "--backend", "gloo", "-H", "localhost:1,silentB:1", "--connect-timeout", "2",
               "--launch-agent", a.agent, "--", a.probe, "sleep=60"], a.work)
    rc = job.finish(30)
    check(rc == 255, f"strata-run exited {rc}, expected 255")
    check(2 <= job.elapsed < 10, f"strata-run took {job.elapsed:.1f} s")
    check("strata-run: host silentB (rank 1) could not be reached within 2 s: no answer from the launch agent"
          in job.err, "no unreachable-host message")


def mode_mpi(a):
    release = os.path.join(a.work, "release")
    job = Job([a.run, "--backend", "mpi", "--verbose", "-np", "2", "-x", "PROBE_EXTRA=1", "--", a.probe,
               "hold=" + release], a.work)
    job.wait_for(lambda: sum("pid=" in line for line in job.out) == 2, 60, "2 MPI ranks to start")
    # Rank R's lines are "[R] line" under mpirun too, not Open MPI's "[1,R]<stdout>:line".
    vals = rank_vars(job.out)
    check(sorted(vals) == [0, 1], f"mpirun ranks: {sorted(vals)}")
    secrets = {v["STRATA_JOB_SECRET"] for v in vals.values()}
    check(len(secrets) == 1 and HEX64.match(next(iter(secrets))), f"secrets: {secrets}")
    assert_secret_not_on_any_command_line(next(iter(secrets)))
    open(release, "w").close()
    check(job.finish(60) == 0, "strata-run (mpirun) did not exit 0")
    for r, v in vals.items():
        check(v["OMPI_COMM_WORLD_RANK"] == str(r), f"OMPI_COMM_WORLD_RANK={v['OMPI_COMM_WORLD_RANK']}")
        check(v["MASTER_ADDR"] == "127.0.0.1" and v["PROBE_EXTRA"] == "1", f"rank {r}'s env: {v}")
        # MPI ranks keep the manifest's comm library.
        check(v["STRATA_COMM_LIBRARY"] == "<unset>", f"rank {r}'s STRATA_COMM_LIBRARY: {v}")
        check(v["STRATA_LIBRARY"] == own_library(a), f"rank {r}'s STRATA_LIBRARY: {v}")
    command = [line for line in job.err if line.startswith("strata-run: ")]
    check(command and "-x STRATA_JOB_SECRET" in command[0].replace("'", ""), f"--verbose printed {command}")


def mode_mpi_agent(a):
    # mpirun starts its daemons through the fixture agent (--launch-agent -> plm_rsh_agent).
    release = os.path.join(a.work, "release")
    log, env = agent_log_env(a)
    job = Job([a.run, "--backend", "mpi", "-H", "fakehost1:1,fakehost2:1", "--launch-agent", a.agent, "--",
               a.probe, "hold=" + release], a.work, env)
    job.wait_for(lambda: sum("pid=" in line for line in job.out) == 2, 60, "2 MPI ranks to start")
    secrets = {v["STRATA_JOB_SECRET"] for v in rank_vars(job.out).values()}
    check(len(secrets) == 1 and HEX64.match(next(iter(secrets))), f"secrets: {secrets}")
    # mpirun, the agents, the orted daemons and the ranks are all running now.
    assert_secret_not_on_any_command_line(next(iter(secrets)))
    open(release, "w").close()
    check(job.finish(60) == 0, "strata-run (mpirun) did not exit 0")
    check({v["MASTER_ADDR"] for v in rank_vars(job.out).values()} == {"fakehost1"}, "MASTER_ADDR is not fakehost1")
    check(agent_hosts(log) == ["fakehost1", "fakehost2"], f"agent started for {agent_hosts(log)}")


FRAGMENT = re.compile(r"<(\d+)\.(\d+)\.(\d+)>")


def fragment_lines(lines, prefixed):
    """The probe's partial=N lines among `lines`, as a set of "[R] text" (or bare "text"). Fails on a
    line that holds two ranks' text, or anything between the fragments."""
    found = set()
    for line in lines:
        m = re.match(r"^\[(\d+)\] (.*)$", line) if prefixed else None
        text = m.group(2) if m else line
        fragments = FRAGMENT.findall(text)
        if not fragments:
            continue
        check(not prefixed or m is not None, f"a line without a rank prefix: {line!r}")
        check("".join(f"<{r}.{i}.{k}>" for r, i, k in fragments) == text, f"a line with other text: {line!r}")
        ranks = {int(r) for r, _, _ in fragments}
        check(len(ranks) == 1, f"a line holds the text of ranks {sorted(ranks)}: {line!r}")
        check(not prefixed or int(m.group(1)) in ranks, f"rank {m.group(1) if m else ''}'s prefix on {line!r}")
        found.add(line)
    return found


def expected_fragment_lines(world, lines, prefixed):
    """(stdout, stderr) sets the probe's partial=LINES writes: LINES stdout lines, one stderr line."""
    def text(r, i):
        return ("[%d] " % r if prefixed else "") + "".join(f"<{r}.{i}.{k}>" for k in range(3))
    return ({text(r, i) for r in range(world) for i in range(lines)},
            {text(r, lines) for r in range(world)})


def partial_lines_job(a, backend, prefixed):
    """A 3-rank job whose ranks write partial lines slowly; returns the job, after checking that its
    fragment lines are exactly the whole lines the ranks wrote."""
    argv = [a.run, "--backend", backend, "-np", "3"] + ([] if prefixed else ["--no-rank-prefix"])
    job = Job(argv + ["--", a.probe, "partial=4"], a.work)
    check(job.finish(60) == 0, f"strata-run --backend {backend} did not exit 0")
    out, err = expected_fragment_lines(3, 4, prefixed)
    check(fragment_lines(job.out, prefixed) == out, f"{backend}: stdout lines {sorted(fragment_lines(job.out, prefixed))}")
    check(fragment_lines(job.err, prefixed) == err, f"{backend}: stderr lines {sorted(fragment_lines(job.err, prefixed))}")
    for r in range(3):
        prefix = f"[{r}] " if prefixed else ""
        # The probe's last line has no '\n': it is flushed at the end, whole.
        check(f"{prefix}last line of rank {r}" in job.out, f"{backend}: no {prefix}last line of rank {r}")
        check(f"{prefix}stderr line from rank {r}" in job.err, f"{backend}: no {prefix}stderr line of rank {r}")
    return job


MIXED_TAG = re.compile(r"[^\n]\[1,\d+\]<stdout>:")


def mode_partial_lines(a):
    # Open MPI forwards each fragment as a chunk without a '\n' of its own, so on mpirun's output
    # another rank's tag follows a partial line directly; strata-run must print the same whole
    # "[R] " lines as the gloo backend, which reads each rank's pipes itself. First the premise:
    # a bare mpirun (with strata-run's options) does mix the ranks' tags into one line.
    raw = subprocess.run(mpirun_command(3) + ["--tag-output", a.probe, "partial=4"], cwd=a.work,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    print("---- bare mpirun's stdout\n" + raw.stdout, flush=True)
    check(raw.returncode == 0, f"bare mpirun exited {raw.returncode}: {raw.stderr}")
    check(MIXED_TAG.search(raw.stdout) is not None,
          "bare mpirun put no tag in the middle of a line: the parser is not exercised by this job")
    jobs = {backend: partial_lines_job(a, backend, True) for backend in ("gloo", "mpi")}
    mpi_text = "\n".join(jobs["mpi"].out)
    check(re.search(r"\[1,\d+\]<std", mpi_text) is None, "strata-run passed on an Open MPI tag")
    for backend, job in jobs.items():
        for line in job.out:
            check(re.match(r"^\[\d+\] ", line), f"{backend}: a stdout line without a rank prefix: {line!r}")
    gloo, mpi = (fragment_lines(jobs[b].out + jobs[b].err, True) for b in ("gloo", "mpi"))
    check(gloo == mpi, f"the backends printed different lines: gloo only {gloo - mpi}, mpi only {mpi - gloo}")


def mode_no_rank_prefix(a):
    for backend in ("gloo", "mpi"):
        job = partial_lines_job(a, backend, False)
        for line in job.out + job.err:
            check(not re.match(r"^\[\d+(,\d+)?\]", line), f"{backend}: a tagged line: {line!r}")


def mpirun_command(np):
    """mpirun with the options strata-run gives it (mpi_backend.cpp), for a bare run to compare."""
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    return ["mpirun", *root, "--oversubscribe", "-np", str(np), "--mca", "btl_vader_single_copy_mechanism", "none"]


def mpirun_signal_exit(rc, sig):
    """Open MPI 4.1's mpirun ends its ranks and exits 1 on SIGINT/SIGTERM/SIGHUP; a mpirun that died
    of the signal itself would give 128 + signal, which strata-run passes on just as well."""
    return rc in (1, 128 + sig)


def mode_mpi_signals(a):
    # strata-run runs mpirun as its child and passes on SIGINT/SIGTERM/SIGHUP sent to its own pid
    # (kill(), as a scheduler does); strata-run exits with mpirun's status.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        job = Job([a.run, "--backend", "mpi", "-np", "2", "--", a.probe, "sleep=60"], a.work)
        job.wait_for(lambda: len(job.pids()) == 2, 60, "2 MPI ranks to start")
        pids = job.pids()
        job.proc.send_signal(sig)
        sent = time.monotonic()
        rc = job.finish(30)
        check(mpirun_signal_exit(rc, sig), f"strata-run exited {rc} after {sig.name}, expected mpirun's 1")
        check(time.monotonic() - sent < 10, f"strata-run took more than 10 s after {sig.name}")
        check(f"strata-run: got {sig.name}, passing it on to mpirun" in job.err, f"no message about {sig.name}")
        assert_gone(pids, 5)


def mode_flood_signal(a):
    # Ranks write faster than strata-run's stdout is read: a SIGTERM must still be acted on at once,
    # not when the output stops (the flood lasts 20 s).
    for backend, message in (("gloo", "stopping every rank"), ("mpi", "passing it on to mpirun")):
        job = Job([a.run, "--backend", backend, "-np", "2", "--", a.probe, "flood=20"], a.work, slow_stdout=True)
        job.wait_for(lambda: any(line.startswith("[1] flood 1 ") for line in job.out), 60, "the flood")
        time.sleep(1)
        job.proc.send_signal(signal.SIGTERM)
        expected = f"strata-run: got SIGTERM, {message}"
        job.wait_for(lambda: expected in job.err, 5, f"{backend}: {expected!r} while the ranks flood stdout")
        job.read_stdout_fast()
        rc = job.finish(30)
        check(rc == 128 + signal.SIGTERM if backend == "gloo" else mpirun_signal_exit(rc, signal.SIGTERM),
              f"{backend}: strata-run exited {rc} after SIGTERM")


class TerminalJob:
    """strata-run as the foreground job of a pseudo-terminal, as run from an interactive shell: its
    stdin, stdout and stderr are the terminal, and ^C goes to the terminal's foreground group."""

    def __init__(self, argv, cwd):
        print("running on a terminal: " + " ".join(argv), flush=True)
        self.pid, self.master = pty.fork()
        if self.pid == 0:
            try:
                os.chdir(cwd)
                os.execv(argv[0], argv)
            finally:
                os._exit(127)
        self.text = ""
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._collect)
        self.reader.start()

    def _collect(self):
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: every process holding the terminal has ended
                break
            if not chunk:
                break
            with self.lock:
                self.text += chunk.decode(errors="replace").replace("\r\n", "\n")

    def lines(self):
        with self.lock:
            return self.text.split("\n")

    def type(self, data):
        os.write(self.master, data)

    def wait_for(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)  # mpirun gets SIGTERM (parent-death signal)
        print("---- terminal\n" + "\n".join(self.lines()[:200]), flush=True)
        fail(f"timed out waiting for {what}")

    def finish(self, timeout):
        """strata-run's exit status (128 + signal if one ended it), or fails after `timeout`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.reader.join(10)
                os.close(self.master)
                print("---- terminal\n" + "\n".join(self.lines()[:200]), flush=True)
                return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
            time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        print("---- terminal\n" + "\n".join(self.lines()[:200]), flush=True)
        fail(f"strata-run did not end within {timeout} s")


def mode_mpi_terminal(a):
    # Run from a terminal, mpirun reads the keyboard for rank 0 only while it is in the terminal's
    # foreground process group (Open MPI 4.1, orte_iof_hnp_stdin_check), as it was when strata-run
    # exec'd it. The terminal's ^C reaches strata-run and mpirun together: mpirun must get it once
    # (a second SIGINT makes it force-abort), so the job ends cleanly.
    job = TerminalJob([a.run, "--backend", "mpi", "-np", "2", "--", a.probe, "read-stdin", "sleep=60"], a.work)
    pids_of = lambda: [int(m.group(1)) for line in job.lines() for m in [re.match(r"^\[\d+\] pid=(\d+)$", line)] if m]
    job.wait_for(lambda: len(pids_of()) == 2, 60, "2 MPI ranks to start")
    pids = pids_of()
    job.type(b"typed on the terminal\n")
    job.wait_for(lambda: "[0] stdin: typed on the terminal" in job.lines(), 10, "rank 0 to read the typed line")
    job.type(b"\x03")
    sent = time.monotonic()
    rc = job.finish(30)
    text = "\n".join(job.lines())
    check(mpirun_signal_exit(rc, signal.SIGINT), f"strata-run exited {rc} after ^C")
    check(time.monotonic() - sent < 10, "strata-run took more than 10 s after ^C")
    check("passing it on to mpirun" not in text, "strata-run passed the terminal's SIGINT on to mpirun, which had it")
    check("forcibly" not in text and "ctrl-c again" not in text.lower(), "mpirun got SIGINT twice and force-aborted")
    assert_gone(pids, 5)


def mode_mpirun_killed(a):
    # An mpirun killed by a signal: strata-run exits 128 + signal, as a shell would report it.
    fake = os.path.join(a.work, "fake_mpirun.sh")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho fake mpirun output\nkill -TERM $$\n")
    os.chmod(fake, 0o755)
    job = Job([a.run, "--mpirun", fake, "-np", "2", "--", "true"], a.work)
    rc = job.finish(30)
    check(rc == 128 + signal.SIGTERM, f"strata-run exited {rc}, expected {128 + signal.SIGTERM}")
    check(job.out == ["fake mpirun output"], f"mpirun's own untagged line did not pass unchanged: {job.out}")


def mode_cli(a):
    job = Job([a.run, "--version"], a.work)
    check(job.finish(10) == 0, "strata-run --version did not exit 0")
    check(job.out == [f"strata-run {a.version_text}"] and job.err == [], f"--version printed {job.out} {job.err}")
    job = Job([a.run, "--help"], a.work)
    check(job.finish(10) == 0, "strata-run --help did not exit 0")
    check(any(line.split()[:1] == ["--no-rank-prefix"] for line in job.out), "--help does not list --no-rank-prefix")
    for bad in (["--bogus", "--", "true"], ["-np", "two", "--", "true"], ["--np"]):
        job = Job([a.run, *bad], a.work)
        rc = job.finish(10)
        check(rc == 1, f"strata-run {' '.join(bad)} exited {rc}, expected 1")
        check(len(job.err) == 1 and job.err[0].startswith("error: ") and job.out == [],
              f"strata-run {' '.join(bad)}: expected one error line, got {job.out} {job.err}")


MODES = {name[5:]: fn for name, fn in globals().items() if name.startswith("mode_")}

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=sorted(MODES))
    p.add_argument("--run", required=True)
    p.add_argument("--probe", required=True)
    p.add_argument("--agent", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--version-text", help="the version strata-run --version must print (cli mode)")
    a = p.parse_args()
    # The tests check the STRATA_LIBRARY strata-run chooses itself, not one the caller's shell has.
    os.environ.pop("STRATA_LIBRARY", None)
    os.makedirs(a.work, exist_ok=True)
    for name in os.listdir(a.work):
        os.remove(os.path.join(a.work, name))
    MODES[a.mode](a)
    print("PASS")
