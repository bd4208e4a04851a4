#!/usr/bin/env bash
# Usage: bench/step_overhead/run.sh <build-dir> [fashion_mnist options, e.g. --data-dir DIR]
# Environment: ROUNDS (5), STEPS (optimizer steps per run, 500), SKIP (warm-up steps each run
# leaves out, 30), MANIFEST (examples/manifests/default.json).
#
# Trains the Fashion-MNIST example (examples/fashion_mnist, OPENBLAS_NUM_THREADS=1, real data) in
# four configurations: 1 and 2 ranks, timeline off and on (STRATA_TIMELINE to a temporary file).
# One run is one process group of STEPS steps; after one warm-up run, ROUNDS rounds each run all
# four, in an order that rotates by round, so machine noise hits every configuration alike. Each
# run prints its split per optimizer step (--time-report: the mean over ranks of StepResult::time,
# bar the first SKIP steps and each epoch's first step). The table gives per configuration the
# median over rounds and (min-max) of: step time, host compute (forward/backward/data: the
# reference, measured in the same runs), the runtime's time (step - host) and its parts, the
# comm wait that is only one rank waiting for the other's slower host compute (imbalance), and
# the runtime share (median runtime / median step).
# Last line: headline runtime_share=<2 ranks, timeline off> timeline_cost=<median step with the
# timeline / without, at 2 ranks, - 1>.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build=${1:?usage: run.sh <build-dir> [fashion_mnist options]}
shift
bin="$build/bin/fashion_mnist"
if [[ ! -x $bin ]]; then
  echo "run.sh: $bin not found; build the target step_overhead_bench" >&2
  exit 1
fi
rounds=${ROUNDS:-5}
steps=${STEPS:-500}
skip=${SKIP:-30}
manifest=${MANIFEST:-$root/examples/manifests/default.json}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
results="$tmp/results"
: >"$results"

# run NP TIMELINE(on|off) STEPS [fashion_mnist options]: prints the --time-report line's key=value fields.
run() {
  local np=$1 timeline=$2 n=$3 trace=""
  shift 3
  [[ $timeline == on ]] && trace="$tmp/trace-$np.json"
  local out line
  out=$(STRATA_TIMELINE=$trace STRATA_LOG_LEVEL=warn OPENBLAS_NUM_THREADS=1 \
    mpirun --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none \
    -x OPENBLAS_NUM_THREADS -x STRATA_TIMELINE -x STRATA_LOG_LEVEL -np "$np" \
    "$bin" --manifest "$manifest" --epochs 1000 --max-steps "$n" --time-report \
    --time-report-skip "$skip" "$@" 2>&1) || { echo "$out" >&2; return 1; }
  line=$(echo "$out" | sed -n 's/^step_time //p')
  if [[ -z $line ]]; then
    echo "run.sh: no step_time line from $np ranks, timeline $timeline:" >&2
    echo "$out" >&2
    return 1
  fi
  if [[ -n $trace ]]; then
    line="$line trace_bytes=$(stat -c %s "$trace" 2>/dev/null || echo 0)"
    rm -f "$trace"
  fi
  echo "$line"
}

configs=("1 off" "2 off" "1 on" "2 on")
echo "step_overhead: $(basename "$manifest"), $steps steps per run ($skip warm-up), $rounds rounds x ${#configs[@]} configurations, $(nproc) cores"
run 2 off $((skip + 20)) "$@" >/dev/null  # warm-up: page cache, the plugins' first load
start=$SECONDS
for round in $(seq 1 "$rounds"); do
  for i in "${!configs[@]}"; do
    cfg=${configs[$(( (i + round - 1) % ${#configs[@]} ))]}
    read -r np timeline <<<"$cfg"
    line=$(run "$np" "$timeline" "$steps" "$@")
    echo "$np $timeline $round $line" >>"$results"
    echo "  round $round: ranks=$np timeline=$timeline $line" >&2
  done
done
echo "($((SECONDS - start)) s; figures in ms per optimizer step, median over $rounds rounds (min-max))"
echo

awk -v steps="$steps" '
function median(list,   n, v, i, j, t) {
  n = split(list, v, " ")
  for (i = 2; i <= n; i++) { t = v[i] + 0; for (j = i - 1; j >= 1 && v[j] + 0 > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
  lo = v[1] + 0; hi = v[n] + 0
  return (n % 2) ? v[(n + 1) / 2] + 0 : (v[n / 2] + v[n / 2 + 1]) / 2
}
function cell(key, list,   m) { m = median(list); return sprintf("%6.3f (%.3f-%.3f)", m * 1e3, lo * 1e3, hi * 1e3) }
function med_ms(list) { return sprintf("%6.3f", median(list) * 1e3) }
{
  k = $1 " " $2; keys[k] = 1
  for (i = 4; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] + 0 }
  rt = f["wall"] - f["host"]
  L[k, "wall"] = L[k, "wall"] " " f["wall"]; L[k, "host"] = L[k, "host"] " " f["host"]
  L[k, "rt"] = L[k, "rt"] " " rt; L[k, "cw"] = L[k, "cw"] " " f["comm_wait"]
  L[k, "opt"] = L[k, "opt"] " " f["optimizer"]; L[k, "ga"] = L[k, "ga"] " " f["gather"]
  L[k, "oth"] = L[k, "oth"] " " f["runtime_other"]; L[k, "imb"] = L[k, "imb"] " " f["imbalance_wait"]
  L[k, "hmin"] = L[k, "hmin"] " " f["host_min"]; L[k, "hmax"] = L[k, "hmax"] " " f["host_max"]
  L[k, "tb"] = L[k, "tb"] " " (("trace_bytes" in f) ? f["trace_bytes"] : 0); delete f
}
END {
  printf "%-5s %-8s | %-20s | %-20s | %-20s | %-6s | %-6s | %-6s | %-6s | %-6s | %-13s | %s\n", \
    "ranks", "timeline", "step ms", "host ms (reference)", "runtime ms", "comm", "optim", \
    "gather", "other", "imbal.", "host/rank", "runtime share"
  split("1 off,2 off,1 on,2 on", order, ",")
  for (o = 1; o <= 4; o++) {
    k = order[o]; if (!(k in keys)) continue
    split(k, p, " ")
    w = median(L[k, "wall"]); r = median(L[k, "rt"])
    step[k] = w; runtime[k] = r
    printf "%-5s %-8s | %s | %s | %s | %s | %s | %s | %s | %s | %.3f-%.3f   | %.3f\n", p[1], p[2], \
      cell(k, L[k, "wall"]), cell(k, L[k, "host"]), cell(k, L[k, "rt"]), med_ms(L[k, "cw"]), \
      med_ms(L[k, "opt"]), med_ms(L[k, "ga"]), med_ms(L[k, "oth"]), med_ms(L[k, "imb"]), \
      median(L[k, "hmin"]) * 1e3, median(L[k, "hmax"]) * 1e3, (w > 0 ? r / w : 0)
  }
  print ""
  print "comm = comm_wait, optim = optimizer, other = runtime_other (each part of runtime ms);"
  print "imbal. = the part of comm wait that is one rank waiting for the slower rank'"'"'s host work;"
  print "host/rank = fastest-slowest rank'"'"'s host ms. Reference: host ms, and the 1-rank step."
  if (("2 on" in keys) && median(L["2 on", "tb"]) > 0)
    printf "timeline file at 2 ranks: %.0f bytes for %d steps (setup included)\n", median(L["2 on", "tb"]), steps
  print ""
  share = (("2 off" in step) && step["2 off"] > 0) ? runtime["2 off"] / step["2 off"] : 0
  cost = (("2 off" in step) && ("2 on" in step) && step["2 off"] > 0) ? step["2 on"] / step["2 off"] - 1 : 0
  printf "headline runtime_share=%.4f timeline_cost=%.4f\n", share, cost
}' "$results"
