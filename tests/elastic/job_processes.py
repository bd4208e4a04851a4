"""Finding one rank's process of one job, for the tests and the benchmark that kill a rank
(tests/elastic/restart_test.py, slurm_test.py, bench/elastic/run.py). Linux /proc only."""
import os


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def processes_running(program):
    """(pid, environment variables as b"NAME=VALUE") of every process whose argv[0] ends with
    `program`; a process that ends while it is read is left out."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if not f.read().split(b"\0")[0].endswith(program.encode()):
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                yield int(pid), f.read().split(b"\0")
        except OSError:
            continue


def slurm_rank_pid(rank, program, job_id):
    """The pid of `program` with rank `rank` in Slurm job `job_id` (srun's ranks are children of
    slurmstepd, not of the launcher)."""
    for pid, variables in processes_running(program):
        if f"RANK={rank}".encode() in variables and f"SLURM_JOB_ID={job_id}".encode() in variables:
            return pid
    return None


def rank_pid(rank, program, job_pid):
    """The pid of `program` with rank `rank` among the descendants of `job_pid` (other jobs may run
    the same program beside this one)."""
    for pid, variables in processes_running(program):
        if f"RANK={rank}".encode() not in variables and f"OMPI_COMM_WORLD_RANK={rank}".encode() not in variables:
            continue
        try:
            ancestor = pid
            while ancestor > 1 and ancestor != job_pid:
                ancestor = parent_of(ancestor)
        except (OSError, ValueError, IndexError):
            continue
        if ancestor == job_pid:
            return pid
    return None
