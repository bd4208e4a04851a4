#!/usr/bin/env bash
# Builds the manifest fuzzer (libFuzzer + ASan + UBSan, clang) in its own folder and runs it for
# FUZZ_SECONDS (default 60) on a seed corpus of the repository's manifests, copied to a temporary
# folder so that the inputs it adds stay out of the tree. Fails on any crash, sanitizer report,
# uncaught exception or input slower than 10 s; the input that did it lands in <build>/fuzz-artifacts.
# Usage: scripts/fuzz.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-fuzz}"
seconds="${FUZZ_SECONDS:-60}"

cmake -S "$root" -B "$build" -G Ninja -DSTRATA_WERROR=ON -DSTRATA_BUILD_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF -DSTRATA_BUILD_EXAMPLES=OFF
cmake --build "$build" --target strata_manifest_fuzz -j "$(nproc)"

corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT
cp "$root"/examples/manifests/*.json "$root"/tests/catalogue/manifests/*.json "$corpus"/
mkdir -p "$build/fuzz-artifacts"
# Stop at the first report of undefined behaviour, with its stack.
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
"$build/bin/strata_manifest_fuzz" "$corpus" \
  -max_total_time="$seconds" -timeout=10 -max_len=16384 -print_final_stats=1 \
  -dict="$root/tests/fuzz/manifest.dict" -artifact_prefix="$build/fuzz-artifacts/"
