#!/usr/bin/env bash
# Usage: bench/nvme_offload/run.sh <build-dir> [bench options]
#   e.g. run.sh build --dir /local_nvme --log2 26 --steps 5
# The state files go to --dir (default: a fresh folder under $TMPDIR or /tmp, removed after).
# Prints the machine's load and the drive's free space, the table, and ends with the headline.
set -euo pipefail
build=${1:?usage: run.sh <build-dir> [bench options]}
shift
bench="$build/bin/strata_nvme_offload_bench"
if [[ ! -x $bench ]]; then
  echo "run.sh: $bench not found; build the target strata_nvme_offload_bench" >&2
  exit 1
fi
scratch=$(mktemp -d "${TMPDIR:-/tmp}/strata-nvme-bench.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) hardware threads"
echo "drive: $(df -h --output=source,fstype,avail "$scratch" | tail -1)"
out=$("$bench" --dir "$scratch" "$@")
echo "$out" | grep -v '^headline'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
headline=$(echo "$out" | grep '^headline' || true)
[[ -n $headline ]] || { echo "run.sh: the benchmark printed no headline" >&2; exit 1; }
echo "$headline"
