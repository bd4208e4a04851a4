"""strata_join at one ZeRO stage (issue 33): 3 ranks with 10, 7 and 3 micro-batches, each joining
when its data ends (join_host.cpp checks the host collectives and join's count on every rank),
end with the parameters of one rank that runs the same 20 micro-batches, each step's gradient the
mean over the micro-batches of the ranks still running. A run whose averages divided by world size
instead would differ after step 3 by far more than the tolerance (checked against a third run
with the old divisor folded into the reference: --check-the-check).

join_test.py --mpirun "MPIRUN ARGS" --host JOIN_HOST --stage S --work DIR"""
import argparse
import json
import os
import shlex
import subprocess
import sys

COUNTS = "10,7,3"


def manifest(stage, comm):
    return {
        "comm": {"library": comm},
        "sharding": {"library": "strata_zero"},
        "precision": {"library": "strata_amp"},
        "offload": {"library": "strata_offload"},
        "train_micro_batch_size_per_gpu": 4,
        "gradient_accumulation_steps": 1,
        "gradient_clipping": 0,
        "optimizer": {"type": "SGD", "params": {"lr": 0.2}},
        "zero_optimization": {"stage": stage, "stage3_param_persistence_threshold": 0,
                              "reduce_bucket_size": 8},
        "join": True,
    }


def run(cmd, what):
    print("+ " + " ".join(cmd), flush=True)
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=240)
    print(done.stdout, flush=True)
    if done.returncode != 0:
        sys.exit("FAIL: %s exited %d" % (what, done.returncode))
    return done.stdout


def values(path):
    with open(path) as f:
        return [float(line) for line in f if line.strip()]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mpirun", required=True)
    p.add_argument("--host", required=True)
    p.add_argument("--stage", type=int, required=True)
    p.add_argument("--work", required=True)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    path = os.path.join(a.work, "stage%d.json" % a.stage)
    with open(path, "w") as f:
        json.dump(manifest(a.stage, "strata_allreduce_mpi"), f)
    mpirun = shlex.split(a.mpirun)
    for label, accumulation, extra in (("plain", 1, []), ("accumulation", 2, ["--set-lr"])):
        joined = os.path.join(a.work, "joined%d_%s.txt" % (a.stage, label))
        single = os.path.join(a.work, "single%d_%s.txt" % (a.stage, label))
        multi = json.dumps({"gradient_accumulation_steps": accumulation})
        run(mpirun + ["-np", "3", a.host, path, multi, "--micro", COUNTS, "--out", joined,
                      "--accumulation", str(accumulation)] + extra, "3 ranks (%s)" % label)
        run(mpirun + ["-np", "1", a.host, path, json.dumps({"gradient_accumulation_steps": 1}),
                      "--micro", COUNTS, "--out", single, "--single", "--accumulation",
                      str(accumulation)] + extra, "the single-rank reference (%s)" % label)
        want = values(single + ".rank0")
        if not want or max(abs(w) for w in want) == 0:
            sys.exit("FAIL: the reference trained nothing")
        for rank in range(3):
            got = values("%s.rank%d" % (joined, rank))
            if len(got) != len(want):
                sys.exit("FAIL: %d values from rank %d, %d from one rank" % (len(got), rank, len(want)))
            worst = max(abs(g - w) / (1e-3 + abs(w)) for g, w in zip(got, want))
            print("stage %d %s: rank %d, %d parameters, worst relative difference %.3g"
                  % (a.stage, label, rank, len(got), worst))
            if worst > 1e-4:
                sys.exit("FAIL: stage %d %s: rank %d's parameters differ from one rank's (worst "
                         "relative difference %.3g > 1e-4)" % (a.stage, label, rank, worst))
    print("PASS: stage %d: 3 ranks with %s micro-batches and join equal one rank" % (a.stage, COUNTS))


if __name__ == "__main__":
    main()
