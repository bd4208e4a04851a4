#!/bin/bash
# run_refusals.sh MPIRUN BINARY DATA_DIR — fashion_mnist --device cuda refuses, with a message and
# exit status 1, what it cannot do on this machine (runs everywhere, GPU or not):
#  - a binary built without CUDA: "built without CUDA", before any data is read;
#  - a machine without a visible device: "no visible CUDA device for local rank 0 of 1";
#  - with devices: more ranks on the node than devices without --share-device ("N ranks on this
#    node but M visible CUDA device(s)").
set -u
mpirun=$1 binary=$2 data_dir=$3
expect() {  # expect <what> <message> <command...>: exit 1 and the message on the output
  local what=$1 message=$2
  shift 2
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  if [ $rc -eq 0 ] || ! grep -qF "$message" <<< "$out"; then
    echo "FAIL: $what: expected a non-zero exit and '$message'; got exit $rc:"
    echo "$out" | grep -v 'info\]' | tail -n 20
    exit 1
  fi
  echo "ok: $what: $(grep -m1 -F "$message" <<< "$out")"
}
probe=$("$binary" --device cuda --data-dir /nonexistent 2>&1)
if grep -q "built without CUDA" <<< "$probe"; then
  expect "built without CUDA" "built without CUDA" "$binary" --device cuda --data-dir "$data_dir"
  exit 0
fi
devices=0
if command -v nvidia-smi > /dev/null 2>&1; then
  devices=$(nvidia-smi -L 2> /dev/null | grep -c '^GPU ')
fi
run=("$mpirun" --allow-run-as-root --oversubscribe)
if [ "$devices" -eq 0 ]; then
  expect "no device" "no visible CUDA device for local rank 0 of 1" \
    "${run[@]}" -np 1 "$binary" --device cuda --data-dir "$data_dir" --epochs 1 --max-steps 1
else
  ranks=$((devices + 1))
  expect "more ranks than devices" "$ranks ranks on this node but $devices visible CUDA device(s)" \
    "${run[@]}" -np "$ranks" "$binary" --device cuda --data-dir "$data_dir" --epochs 1 --max-steps 1
fi
