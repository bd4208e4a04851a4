#!/usr/bin/env bash
# Runs benchmarks of two builds alternately in one run, so that both see the same machine state:
#   scripts/compare-bench.sh BASE_BUILD NEW_BUILD [ROUNDS] [BENCH...]
# BENCH names folders under bench/ with a run.sh (default: amp cpu_adam fusion). Each build must
# have those benchmarks built (e.g. a `git worktree` of the base commit built with scripts/build.sh).
# Prints every headline as "<bench> <base|new> <round>: headline ..." and, per bench, the mean of
# each headline value for base and new.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
base=${1:?usage: compare-bench.sh BASE_BUILD NEW_BUILD [ROUNDS] [BENCH...]}
new=${2:?usage: compare-bench.sh BASE_BUILD NEW_BUILD [ROUNDS] [BENCH...]}
rounds=${3:-2}
shift $(( $# < 3 ? $# : 3 ))
benches=("$@")
[[ ${#benches[@]} -gt 0 ]] || benches=(amp cpu_adam fusion)

results=$(mktemp)
trap 'rm -f "$results"' EXIT
for bench in "${benches[@]}"; do
  for round in $(seq 1 "$rounds"); do
    for side in base new; do
      build=$base
      [[ $side == new ]] && build=$new
      line=$(bash "$root/bench/$bench/run.sh" "$build" | grep '^headline' | tail -n 1)
      echo "$bench $side $round: $line" | tee -a "$results"
    done
  done
done
echo
# Mean of every key=value per bench and side.
awk '{
  bench = $1; side = $2
  for (i = 5; i <= NF; i++) {
    split($i, kv, "="); key = bench " " kv[1]
    sum[key, side] += kv[2]; n[key, side]++; keys[key] = 1
  }
}
END {
  for (k in keys) {
    b = sum[k, "base"] / n[k, "base"]; v = sum[k, "new"] / n[k, "new"]
    printf "%s: base %.4g new %.4g (new/base %.3f)\n", k, b, v, (b != 0 ? v / b : 0)
  }
}' "$results" | sort
