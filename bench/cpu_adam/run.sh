#!/usr/bin/env bash
# Usage: bench/cpu_adam/run.sh <build-dir> [bench options]
#   e.g. run.sh build --min-log2 24 --max-log2 27 --reps 3
# Environment: STRATA_CPU_ISA=scalar|avx2|avx512 forces a path, STRATA_CPU_THREADS a thread count.
# Prints the machine's load before and after (other work on the machine moves the figures), the
# table, and ends with the benchmark's headline (Adam at the largest size).
set -euo pipefail
build=${1:?usage: run.sh <build-dir> [bench options]}
shift
bench="$build/bin/strata_cpu_adam_bench"
if [[ ! -x $bench ]]; then
  echo "run.sh: $bench not found; build the target strata_cpu_adam_bench" >&2
  exit 1
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) hardware threads"
out=$("$bench" "$@")
echo "$out" | grep -v '^headline'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
headline=$(echo "$out" | grep '^headline' || true)
[[ -n $headline ]] || { echo "run.sh: the benchmark printed no headline" >&2; exit 1; }
echo "$headline"
