"""Finding one rank's process of one job, for the tests and the benchmark that kill a rank
(tests/elastic/restart_test.py, bench/elastic/run.py). Linux /proc only."""
import os


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def slurm_rank_pid(rank, program, job_id):
    """The pid of `program` with rank `rank` in Slurm job `job_id` (srun's ranks are children of
    slurmstepd, not of the launcher)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if not f.read().split(b"\0")[0].endswith(program.encode()):
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                variables = f.read().split(b"\0")
            if f"RANK={rank}".encode() in variables and f"SLURM_JOB_ID={job_id}".encode() in variables:
                return int(pid)
        except (OSError, ValueError):
            continue
    return None


def rank_pid(rank, program, job_pid):
    """The pid of `program` with rank `rank` among the descendants of `job_pid` (other jobs may run
    the same program beside this one)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if not f.read().split(b"\0")[0].endswith(program.encode()):
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                variables = f.read().split(b"\0")
            if f"RANK={rank}".encode() not in variables and f"OMPI_COMM_WORLD_RANK={rank}".encode() not in variables:
                continue
            ancestor = int(pid)
            while ancestor > 1 and ancestor != job_pid:
                ancestor = parent_of(ancestor)
            if ancestor == job_pid:
                return int(pid)
        except (OSError, ValueError, IndexError):
            continue
    return None
