#!/usr/bin/env bash
# Usage: bench/amp/run.sh <build-dir> [strata_amp_bench options]
#   e.g. run.sh build --threads 1 --max-log2 25
# Runs the precision benchmark on the instruction set the plugin picks for this CPU, then (for
# reference, not in the headline) on the forced scalar path. The last line is the first run's
# headline: the lowest cast/memcpy and grad_stats/memcpy ratios over all sizes and thread counts.
set -euo pipefail
build=${1:?usage: run.sh <build-dir> [strata_amp_bench options]}
shift
bench="$build/bin/strata_amp_bench"
if [[ ! -x $bench ]]; then
  echo "run.sh: $bench not found; build the target strata_amp_bench" >&2
  exit 1
fi

best=$("$bench" "$@")
echo "$best" | grep -v '^headline'
echo
echo "== forced scalar path (STRATA_CPU_ISA=scalar), for reference =="
STRATA_CPU_ISA=scalar "$bench" "$@" | sed 's/^headline /scalar: /'
echo
echo "$best" | grep '^headline'
