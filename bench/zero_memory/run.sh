#!/usr/bin/env bash
# Usage: bench/zero_memory/run.sh <build-dir> [bench options, e.g. --sizes 1024,2048,1024]
# Runs zero_memory_bench for world sizes 1, 2, 4 and ZeRO stages 0-3 in fp32 and fp16 (mixed
# precision: "unavailable: <reason>" where the runtime refuses it) and ends with the largest
# |measured - formula| / formula of model-state bytes over every rank of every available run.
set -euo pipefail
build=${1:?usage: run.sh <build-dir> [bench options]}
shift
bench="$build/bin/zero_memory_bench"
if [[ ! -x $bench ]]; then
  echo "run.sh: $bench not found; build the target zero_memory_bench" >&2
  exit 1
fi
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
mpirun=(mpirun --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none)

cat <<'LEGEND'
ZeRO model-state memory per rank (MiB), 2 Adam steps, layers grouped, gradients owned by the runtime.
states = params + grads + master + optim (comm buffers apart); P = parameters, N = world size.
formula, mixed precision (paper, K=12): stage 0 16P, 1 4P+12P/N, 2 2P+14P/N, 3 16P/N
formula, fp32 as implemented:           stage 0 16P, 1 8P+12P/N, 2 4P+16P/N, 3 20P/N
peak_st: sum of per-category peaks (stage 3 includes the gathered layer); rss: process resident set.
LEGEND
"$bench" --print-header
worst=""
for precision in fp32 fp16; do
  for np in 1 2 4; do
    for stage in 0 1 2 3; do
      out=$("${mpirun[@]}" -np "$np" "$bench" --stage "$stage" --precision "$precision" "$@" \
        2>/dev/null) || { echo "run.sh: $precision N=$np stage $stage failed:" >&2; echo "$out" >&2; exit 1; }
      echo "$out" | grep -v '^deviation ' | sed "s/^unavailable /$precision N=$np: unavailable /"
      dev=$(echo "$out" | sed -n 's/^deviation .*max_abs=\([0-9.]*\).*/\1/p')
      if [[ -n $dev ]] && { [[ -z $worst ]] || awk -v a="$dev" -v b="$worst" 'BEGIN { exit !(a > b) }'; }; then
        worst=$dev
      fi
    done
  done
done
[[ -n $worst ]] || { echo "run.sh: no run reported a deviation" >&2; exit 1; }
echo "headline max_formula_deviation=$worst"
