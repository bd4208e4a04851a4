#!/usr/bin/env bash
# Usage: bench/python_ddp/run.sh <build-dir> [train.py options, e.g. --data-dir DIR]
# Strata's PyTorch DistributedOptimizer against PyTorch DDP (gloo), samples/s of the Fashion-MNIST
# MLP at 1, 2 and 4 ranks; the driver is run.py beside this script (see README.md there).
# Last line: headline strata_vs_ddp=<ratio at 2 ranks> strata_vs_ddp_1=... strata_vs_ddp_4=...
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec "${PYTHON:-/usr/bin/python3}" "$here/run.py" "$@"
