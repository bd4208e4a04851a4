#!/usr/bin/env bash
# Configures and builds Strata. Usage: scripts/build.sh [build-dir] [extra cmake args...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
cmake -S "$root" -B "$build" -G Ninja -DSTRATA_WERROR=ON "$@"
cmake --build "$build" -j "$(nproc)"
