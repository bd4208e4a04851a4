#!/usr/bin/env bash
# Usage: bench/transformer/run.sh <build-dir>
# A GPT of 100 M+ parameters (examples/transformer) through Strata's ZeRO stages 0-3 against PyTorch
# DDP, FSDP and DeepSpeed ZeRO-3 on the CPU, at 2 and 4 ranks: tokens/s and per-rank peak RSS; the
# driver is run.py beside this script (see README.md there).
# Last line: headline zero3_rss_vs_ddp=... rss_vs_deepspeed_zero3=... tokens_vs_deepspeed_zero3=...
#            tokens_vs_fsdp=... zero3_vs_stage0_tokens=...
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec /usr/bin/python3 "$here/run.py" "$@"
