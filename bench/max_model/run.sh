#!/usr/bin/env bash
# Usage: bench/max_model/run.sh <build-dir>
# The largest examples/transformer GPT that completes 3 training steps through Strata's ZeRO-3 at
# 2 ranks on this machine, with everything in memory and with the optimizer state and the parameter
# partition on NVMe (ZeRO-Infinity), found by doubling the layers and then bisecting. The driver is
# run.py beside this script (see README.md there).
# Last line: headline nvme_params_vs_ram=... largest_params_nvme=... step_seconds_nvme=...
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec /usr/bin/python3 "$here/run.py" "$@"
