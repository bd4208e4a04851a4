#!/usr/bin/env bash
# The main job: install, build, and train the Fashion-MNIST MLP for 10 epochs on 4 ranks with the
# embedded default manifest (examples/manifests/default.json), launched by strata-run (mpirun
# underneath; STRATA_BACKEND=gloo starts the ranks itself over the Gloo plugin instead). Extra
# arguments go to the trainer.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$root/build"
export OPENBLAS_NUM_THREADS=1
exec "$root/build/bin/strata-run" --backend "${STRATA_BACKEND:-mpi}" -np 4 -- \
  "$root/build/bin/fashion_mnist" --epochs 10 "$@"
