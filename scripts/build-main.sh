#!/usr/bin/env bash
# The main job's build step: only what the job runs (libstrata, the plugins its manifest loads,
# strata-run and the Fashion-MNIST host), in a Release build folder of its own, with no tests and no
# benchmarks. A folder already configured is reused: ninja rebuilds only what changed.
#
# Usage: scripts/build-main.sh [--build-dir DIR] [--backend mpi|gloo] [--manifest FILE] [--cuda]
#   --backend   the strata-run backend: its comm plugin is built (default mpi)
#   --manifest  the manifest the job runs: every plugin library it names is built too
#   --cuda      the GPU path: CUDA sources and the NCCL plugin (also when the manifest names NCCL)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-main"
backend=mpi
manifest=""
cuda=OFF
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build="$2"; shift 2 ;;
    --backend) backend="$2"; shift 2 ;;
    --manifest) manifest="$2"; shift 2 ;;
    --cuda) cuda=ON; shift ;;
    *) echo "build-main.sh: unknown argument '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done
case "$backend" in
  mpi|gloo) ;;
  *) echo "build-main.sh: --backend '$backend': expected mpi or gloo" >&2; exit 2 ;;
esac

targets=(strata strata-run fashion_mnist strata_zero strata_amp strata_offload
         "strata_allreduce_$backend")
if [ -n "$manifest" ]; then
  # The libraries the manifest names (a bare name, or a file whose stem is lib<name>.so).
  named="$(python3 -c '
import json, os, sys
try:
    doc = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit("build-main.sh: --manifest %s: cannot read it as JSON (%s)" % (sys.argv[1], e))
for section in doc.values() if isinstance(doc, dict) else []:
    library = section.get("library") if isinstance(section, dict) else None
    if isinstance(library, str):
        stem = os.path.basename(library)
        print(stem[3:-3] if stem.startswith("lib") and stem.endswith(".so") else stem)
' "$manifest")"
  for name in $named; do
    case "$name" in
      strata_allreduce_nccl) cuda=ON ;;  # added with the CUDA sources below
      strata_allreduce_mpi|strata_allreduce_gloo|strata_zero|strata_amp|strata_offload)
        targets+=("$name") ;;
      *) ;;  # a plugin of the user's own: not ours to build
    esac
  done
fi
if [ "$cuda" = ON ]; then targets+=(strata_allreduce_nccl); fi

# Every setting is given every time, so a reused folder builds this job whatever configured it last:
# STRATA_CUDA follows the job, and a `pip install . --config-settings build-dir=` of the same folder
# (which sets SKBUILD and turns the examples off) is undone.
cmake -S "$root" -B "$build" -G Ninja -U 'SKBUILD*' -DCMAKE_BUILD_TYPE=Release -DSTRATA_WERROR=ON \
  -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF -DSTRATA_BUILD_EXAMPLES=ON -DSTRATA_CUDA="$cuda"
mapfile -t unique < <(printf '%s\n' "${targets[@]}" | sort -u)
cmake --build "$build" -j "$(nproc)" --target "${unique[@]}"
