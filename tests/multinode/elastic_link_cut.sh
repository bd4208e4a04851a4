#!/usr/bin/env bash
# Run by with_topology.sh (issue 33): a 2 hosts x 2 ranks fashion_mnist job under strata-run
# --backend gloo --max-restarts 2, its manifest's checkpoint block saving every 10 steps; once the
# second checkpoint is complete, host B's link is cut (its eth0 down). The ranks find their peers
# gone (Gloo's 30 s timeout), strata-run asks each remote host's agent whether it still answers,
# drops B, and restarts on A's 2 slots from the latest checkpoint: exit 0, every step logged once.
#
# usage: elastic_link_cut.sh STRATA_RUN EXAMPLE DATA_DIR WORK_DIR
set -euo pipefail
run=$1 example=$2 data=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
cd "$work"
cat > manifest.json <<'JSON'
{"comm": {"library": "strata_allreduce_gloo"}, "train_batch_size": 192,
 "train_micro_batch_size_per_gpu": 16, "zero_optimization": {"stage": 0},
 "optimizer": {"type": "AdamW", "params": {"lr": 0.001}},
 "checkpoint": {"save_every": 10, "auto_resume": true}}
JSON
steps=200
fail() { echo "FAIL: $*"; exit 1; }
(
  for _ in $(seq 1 6000); do
    [[ $(cat ck/latest 2>/dev/null) =~ global_step([0-9]+) ]] && (( BASH_REMATCH[1] >= 20 )) && break
    sleep 0.02
  done
  "$STRATA_MN_AGENT" "$STRATA_MN_HOST_B" ip link set eth0 down
  echo "elastic_link_cut.sh: cut host B's link after $(cat ck/latest)"
) &
cutter=$!
set +e
timeout 170 "$run" --backend gloo -H "$STRATA_MN_HOST_A:2,$STRATA_MN_HOST_B:2" \
  --launch-agent "$STRATA_MN_AGENT" --network-interface "$STRATA_MN_SUBNET" --manifest manifest.json \
  --max-restarts 2 --checkpoint-dir "$work/ck" -- \
  "$example" --data-dir "$data" --epochs 1 --max-steps $steps --loss-log loss.txt > out.log 2>&1
rc=$?
set -e
wait $cutter || true
cat out.log | grep -v "\[info\]" | tail -30
[[ $rc == 0 ]] || fail "strata-run exited $rc, expected 0 after a restart on host A"
grep -q "strata-run: host $STRATA_MN_HOST_B does not answer: ssh: connect to host $STRATA_MN_HOST_B" out.log ||
  fail "strata-run did not find host B silent"
grep -Eq "strata-run: restart 1 of 2 at 2 ranks \(was 4\) after: .*; hosts left: $STRATA_MN_HOST_A:2$" out.log ||
  fail "no restart at 2 ranks on host A alone"
grep -Eq "auto_resume: resumed from .*/global_step([2-9][0-9]|1[0-9][0-9]) " out.log ||
  fail "the restarted job did not resume from the second checkpoint or a later one"
[[ $(awk '{print $1}' loss.txt | tr '\n' ' ') == "$(seq -s ' ' 1 $steps) " ]] ||
  fail "the loss log does not hold steps 1-$steps once each"
echo "PASS: host B cut off; restarted on host A's 2 slots from the checkpoint; steps 1-$steps logged once"
