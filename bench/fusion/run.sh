#!/usr/bin/env bash
# Usage: bench/fusion/run.sh <build-dir> [extra fusion_bench options]
# Runs the gradient fusion benchmark with 2 and 4 ranks; the last line is the lowest speedup.
set -euo pipefail
build=${1:?usage: run.sh <build-dir> [fusion_bench options]}
shift
bench="$build/bin/fusion_bench"
plugins="$build/lib/strata/plugins"
lowest=""
for np in 2 4; do
  out=$(mpirun --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none \
    -np "$np" "$bench" --comm-plugin "$plugins/libstrata_allreduce_mpi.so" \
    --zero-plugin "$plugins/libstrata_zero.so" "$@")
  echo "$out"
  echo
  speedup=$(echo "$out" | sed -n 's/^headline fused_speedup=\([0-9.]*\).*/\1/p')
  if [[ -z "$lowest" ]] || awk -v a="$speedup" -v b="$lowest" 'BEGIN{exit !(a < b)}'; then
    lowest=$speedup
  fi
done
echo "headline fused_speedup=$lowest"
