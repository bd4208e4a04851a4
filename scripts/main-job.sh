#!/usr/bin/env bash
# The main job: install, build, and train the Fashion-MNIST MLP for 10 epochs on 4 MPI ranks with the
# embedded default manifest (examples/manifests/default.json). Extra arguments go to the trainer.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$root/build"
export OPENBLAS_NUM_THREADS=1
exec mpirun --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none -np 4 \
  "$root/build/bin/fashion_mnist" --epochs 10 "$@"
