#!/usr/bin/env bash
# Usage: bench/elastic/run.sh <build-dir> [--rounds N] [--seed S] [--backend gloo|mpi]
# A 4-rank fashion_mnist job under strata-run --max-restarts 1, checkpointing every 10 steps; one
# rank, chosen at random, is SIGKILLed at a random step. Per round: the job's own start-up (launch
# to first step) as the reference, the recovery (the kill to the first step after the restart) and
# the steps redone. Headline: the worst round's recovery_seconds and lost_steps.
set -euo pipefail
build=${1:?usage: run.sh <build-dir> [--rounds N] [--seed S] [--backend gloo|mpi]}
shift
for bin in strata-run fashion_mnist; do
  if [[ ! -x $build/bin/$bin ]]; then
    echo "run.sh: $build/bin/$bin not found; build the target $bin" >&2
    exit 1
  fi
done
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) hardware threads"
python3 "$(dirname "$0")/run.py" --build "$build" "$@"
