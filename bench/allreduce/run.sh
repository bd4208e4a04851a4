#!/usr/bin/env bash
# Usage: bench/allreduce/run.sh <build-dir> [bench options]
#   e.g. run.sh build --config '{"chunk_bytes": 4194304}' --min-bytes 1048576
# Runs the allreduce benchmark with 2 and then 4 ranks and ends with the lowest plugin/MPI bus
# bandwidth ratio from 1 MiB up over both runs.
set -euo pipefail
build=${1:?usage: run.sh <build-dir> [bench options]}
shift
bench="$build/bin/strata_allreduce_bench"
if [[ ! -x $bench ]]; then
  echo "run.sh: $bench not found; build the target strata_allreduce_bench" >&2
  exit 1
fi

lowest=""
for np in 2 4; do
  out=$(mpirun --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none \
    -np "$np" "$bench" "$@")
  echo "$out" | grep -v '^headline'
  ratio=$(echo "$out" | sed -n 's/^headline .*plugin_vs_mpi_min=\([0-9.]*\).*/\1/p')
  [[ -n $ratio ]] || { echo "run.sh: no headline from the $np-rank run" >&2; exit 1; }
  echo "ranks=$np plugin_vs_mpi_min=$ratio"
  echo
  if [[ -z $lowest ]] || awk -v a="$ratio" -v b="$lowest" 'BEGIN { exit !(a < b) }'; then
    lowest=$ratio
  fi
done
echo "headline plugin_vs_mpi_min=$lowest"
