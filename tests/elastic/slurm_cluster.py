"""A single-machine Slurm cluster for the tests (Debian's slurmctld, slurmd and munge), started in a
folder of its own on free ports and stopped on exit. `SlurmCluster.start()` returns None with the
reason when this machine cannot run one (not root, packages missing, a daemon that does not come
up): the caller skips with that message.

  cluster = SlurmCluster(folder, cpus=8)
  why = cluster.start()          # None once the node is idle
  try:
      subprocess.run(["salloc", "-n", "4", ...], env=cluster.env())
  finally:
      cluster.stop()
"""
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SlurmCluster:
    def __init__(self, folder, cpus=8, proctrack="pgid"):
        self.folder = os.path.abspath(folder)
        self.cpus = cpus
        self.proctrack = proctrack
        self.conf = os.path.join(self.folder, "slurm.conf")
        self.processes = []

    def env(self, **extra):
        env = dict(os.environ, SLURM_CONF=self.conf)
        for name in [n for n in env if n.startswith("SLURM_") and n != "SLURM_CONF"]:
            del env[name]  # a test run inside another allocation must not leak it
        env.update(extra)
        return env

    def why_not(self):
        if os.geteuid() != 0:
            return "the Slurm daemons need root here (slurmd starts jobs as their users)"
        for tool in ("munged", "slurmctld", "slurmd", "srun", "salloc", "scontrol", "sinfo"):
            if shutil.which(tool) is None and not os.path.exists(f"/usr/sbin/{tool}"):
                return f"{tool} is not installed (Debian: apt-get install slurm-wlm munge)"
        return None

    def _daemon(self, argv, log):
        out = open(os.path.join(self.folder, log), "w")
        # The daemons run in the foreground (-D, -F) and get SIGTERM if the test dies (a ctest
        # timeout kills it without running stop()), so none outlives it.
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=self.env(), start_new_session=True,
                             preexec_fn=lambda: libc.prctl(pr_set_pdeathsig, signal.SIGTERM))
        self.processes.append(p)
        return p

    def start(self, timeout=60):
        why = self.why_not()
        if why:
            return why
        shutil.rmtree(self.folder, ignore_errors=True)
        for sub in ("munge", "state", "spool", "log"):
            os.makedirs(os.path.join(self.folder, sub), mode=0o700)
        key = os.path.join(self.folder, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        socket_path = os.path.join(self.folder, "munge", "munge.socket")
        host = socket.gethostname()
        ctld_port, d_port = free_port(), free_port()
        # proctrack/pgid: a step's signal reaches each task's process group at once. linuxproc walks
        # /proc for the step's processes and, on a loaded machine, missed tasks that a scancel
        # --signal=TERM should have reached (slurm_test.py --stops 20 --proctrack linuxproc beside two
        # busy loops: 7 and 8 of 20 stops missed a rank in two runs, pgid 0 of 20); cgroup needs a cgroup
        # hierarchy that containers seldom give.
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=strata-test
SlurmctldHost={host}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={socket_path}
CredType=cred/munge
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
StateSaveLocation={self.folder}/state
SlurmdSpoolDir={self.folder}/spool
SlurmctldPidFile={self.folder}/slurmctld.pid
SlurmdPidFile={self.folder}/slurmd.pid
SlurmctldLogFile={self.folder}/log/slurmctld.log
SlurmdLogFile={self.folder}/log/slurmd.log
ProctrackType=proctrack/{self.proctrack}
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
InactiveLimit=0
NodeName={host} CPUs={self.cpus} State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
""")
        munged = shutil.which("munged") or "/usr/sbin/munged"
        self._daemon([munged, "-F", "-f", f"--socket={socket_path}", f"--key-file={key}",
                      f"--pid-file={self.folder}/munge/munged.pid", f"--log-file={self.folder}/log/munged.log",
                      f"--seed-file={self.folder}/munge/munge.seed"], "munged.out")
        deadline = time.time() + timeout
        while not os.path.exists(socket_path):
            if time.time() > deadline or self.processes[0].poll() is not None:
                return self._give_up("munged did not start", "munged.out")
            time.sleep(0.1)
        self._daemon([shutil.which("slurmctld") or "/usr/sbin/slurmctld", "-D", "-f", self.conf], "slurmctld.out")
        self._daemon([shutil.which("slurmd") or "/usr/sbin/slurmd", "-D", "-f", self.conf], "slurmd.out")
        while True:
            r = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=self.env())
            if r.returncode == 0 and r.stdout.strip() == "idle":
                return None
            for p, name in zip(self.processes[1:], ("slurmctld", "slurmd")):
                if p.poll() is not None:
                    return self._give_up(f"{name} exited with code {p.returncode}", f"{name}.out")
            if time.time() > deadline:
                return self._give_up(f"the node is not idle within {timeout} s (sinfo: {r.stdout.strip()}"
                                     f"{r.stderr.strip()})", "slurmd.out")
            time.sleep(0.2)

    def _give_up(self, why, log):
        try:
            with open(os.path.join(self.folder, log)) as f:
                tail = f.read()[-600:]
        except OSError:
            tail = ""
        self.stop()
        return f"{why}: {tail.strip()}" if tail.strip() else why

    def stop(self):
        for p in reversed(self.processes):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in reversed(self.processes):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.processes = []
