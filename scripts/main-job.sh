#!/usr/bin/env bash
# The main job: install, build what it runs (scripts/build-main.sh: a Release build in build-main/,
# reused when it is there), and train the Fashion-MNIST MLP for 10 epochs on 4 ranks with the
# embedded default manifest (examples/manifests/default.json), launched by strata-run (mpirun
# underneath; STRATA_BACKEND=gloo starts the ranks itself over the Gloo plugin instead). Extra
# arguments go to the trainer; its --manifest and --device cuda also choose what is built.
# STRATA_BUILD_DIR: another build folder for the job (default build-main/).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
backend="${STRATA_BACKEND:-mpi}"
build="${STRATA_BUILD_DIR:-$root/build-main}"
build_args=(--build-dir "$build" --backend "$backend")
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --manifest) if [ -n "${args[i + 1]:-}" ]; then build_args+=(--manifest "${args[i + 1]}"); fi ;;
    --manifest=*) build_args+=(--manifest "${args[i]#--manifest=}") ;;
    --device) if [ "${args[i + 1]:-}" = cuda ]; then build_args+=(--cuda); fi ;;
    --device=cuda) build_args+=(--cuda) ;;
  esac
done
"$root/scripts/install-deps.sh"
"$root/scripts/build-main.sh" "${build_args[@]}"
export OPENBLAS_NUM_THREADS=1
exec "$build/bin/strata-run" --backend "$backend" -np 4 -- \
  "$build/bin/fashion_mnist" --epochs 10 "$@"
