#!/usr/bin/env bash
# Builds the fuzz targets (libFuzzer + ASan + UBSan, clang) in their own folder and runs each for
# FUZZ_SECONDS (default 60) on a seed corpus copied to a temporary folder, so that the inputs it
# adds stay out of the tree:
#   strata_manifest_fuzz    the repository's manifests
#   strata_checkpoint_fuzz  tests/fuzz/checkpoint_seeds (metadata.json and shard index texts)
# Fails on any crash, sanitizer report, uncaught exception or input slower than 10 s; the input that
# did it lands in <build>/fuzz-artifacts.
# Usage: scripts/fuzz.sh [build-dir] [target...]   (default: every target)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build-fuzz}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(strata_manifest_fuzz strata_checkpoint_fuzz)
seconds="${FUZZ_SECONDS:-60}"

cmake -S "$root" -B "$build" -G Ninja -DSTRATA_WERROR=ON -DSTRATA_BUILD_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF -DSTRATA_BUILD_EXAMPLES=OFF -DSTRATA_CUDA=OFF
cmake --build "$build" --target "${targets[@]}" -j "$(nproc)"

corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$build/fuzz-artifacts"
# Stop at the first report of undefined behaviour, with its stack.
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

for target in "${targets[@]}"; do
  mkdir -p "$corpus/$target"
  case "$target" in
    strata_manifest_fuzz)
      cp "$root"/examples/manifests/*.json "$root"/tests/catalogue/manifests/*.json "$corpus/$target"/
      dict="$root/tests/fuzz/manifest.dict" ;;
    strata_checkpoint_fuzz)
      cp "$root"/tests/fuzz/checkpoint_seeds/* "$corpus/$target"/
      dict="$root/tests/fuzz/checkpoint.dict" ;;
    *) echo "fuzz.sh: unknown target $target" >&2; exit 2 ;;
  esac
  echo "fuzz.sh: $target for $seconds s"
  "$build/bin/$target" "$corpus/$target" \
    -max_total_time="$seconds" -timeout=10 -max_len=16384 -print_final_stats=1 \
    -dict="$dict" -artifact_prefix="$build/fuzz-artifacts/$target-"
done
