#!/usr/bin/env bash
# Usage: bench/checkpoint/run.sh <build-dir> [--ranks N] [bench options]
#   e.g. run.sh build --dir /local_nvme --rounds 7
# 2 ranks (default) save the fp32 AdamW state of 2^26 parameters (16 x 2^22, ZeRO stage 1): a
# blocking save beside a plain write+fsync of the same bytes to the same folder, and an
# asynchronous save's pause beside a memcpy of the rank's state, in the same run. The files go to
# --dir (default: a fresh folder under $TMPDIR or /tmp, removed after). Prints the machine's load
# and the drive's free space, the table, and ends with the headline.
set -euo pipefail
build=${1:?usage: run.sh <build-dir> [--ranks N] [bench options]}
shift
ranks=2
if [[ ${1:-} == --ranks ]]; then
  ranks=$2
  shift 2
fi
bench="$build/bin/strata_checkpoint_bench"
if [[ ! -x $bench ]]; then
  echo "run.sh: $bench not found; build the target strata_checkpoint_bench" >&2
  exit 1
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/strata-checkpoint-bench.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
args=("$@")
[[ " ${args[*]} " == *" --dir "* ]] || args+=(--dir "$scratch")
mpirun=(mpirun --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none)
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) hardware threads"
echo "drive: $(df -h --output=source,fstype,avail "$scratch" | tail -1)"
out=$("${mpirun[@]}" -np "$ranks" "$bench" "${args[@]}")
echo "$out" | grep -v '^headline'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
headline=$(echo "$out" | grep '^headline' || true)
[[ -n $headline ]] || { echo "run.sh: the benchmark printed no headline" >&2; exit 1; }
echo "$headline"
