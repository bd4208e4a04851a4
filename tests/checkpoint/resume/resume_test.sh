#!/usr/bin/env bash
# Checkpoint tests through the fashion_mnist example, real processes under mpirun (issue 13).
#
#   resume_test.sh equal   [--np N] [--manifest F] [--overrides JSON] [--batch B] [--total T]
#                          [--first S] [--save-every K] [--resume-tag TAG]
#       T steps in one go against S steps saving every K (the last save at S), then --resume to T
#       (from DIR, i.e. its latest, or from DIR/TAG): the --dump-params files must be identical
#       bytes (cmp), and so must the resumed run's --loss-log lines.
#   resume_test.sh reshard [--total T] [--first S]
#       4 ranks at stage 3 train T steps, saving at S, logging the loss. strata-ckpt consolidates
#       the checkpoint; then at 2 ranks stage 1 and 1 rank stage 0: loaded with no further step,
#       the parameters equal the consolidated file (an independent stdlib reader, bit for bit);
#       trained on to T, the losses equal the 4-rank run's within 1e-6 relative.
#   resume_test.sh killed  [--steps K]
#       A save is killed part-way (SIGKILL of every rank and mpirun while the shard writer is held
#       by STRATA_TEST_SAVE_PAUSE_AFTER_BYTES): DIR/latest still names the save before it, and
#       --resume DIR loads it and trains, bitwise like a run that was never interrupted.
#   resume_test.sh bad-setup
#       Writes the bad checkpoints the catalogue cases (CMakeLists.txt) resume from: truncated,
#       flipped and missing shards, another model's, a newer format_version.
#
# Environment: MPIRUN (the mpirun command line), EXAMPLE (fashion_mnist), DATA_DIR, MANIFEST_DIR
# (examples/manifests), WORK (a scratch folder, recreated), PYTHON, CHECK (ckpt_check.py), CKPT_TOOL
# (strata-ckpt).
set -u
mode=${1:?usage: resume_test.sh equal|reshard|precision|killed|bad-setup [options]}
shift
np=2
manifest=default.json
overrides='{}'
batch=512  # 117 steps per epoch: 200 steps cross an epoch boundary after the resume at 100
total=200
first=100
save_every=50
resume_tag=""
steps=10
while [ $# -gt 0 ]; do
  case $1 in
    --np) np=$2 ;;
    --manifest) manifest=$2 ;;
    --overrides) overrides=$2 ;;
    --batch) batch=$2 ;;
    --total) total=$2 ;;
    --first) first=$2 ;;
    --save-every) save_every=$2 ;;
    --resume-tag) resume_tag=$2 ;;
    --steps) steps=$2 ;;
    *) echo "resume_test.sh: unknown option $1"; exit 2 ;;
  esac
  shift 2
done

rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 2
overrides=${overrides//@WORK@/$WORK}  # e.g. the nvme offload's folder
logs=()

fail() {
  echo "FAIL: $*"
  for log in "${logs[@]}"; do
    echo "---- $log (last 40 lines) ----"
    tail -n 40 "$log"
  done
  exit 1
}

# run LOG NP [fashion_mnist options...]: the example on NP ranks, output to LOG; fails the test on
# a non-zero exit.
run() {
  local log=$1 ranks=$2
  shift 2
  logs+=("$log")
  echo "+ mpirun -np $ranks fashion_mnist $*"
  local start=$SECONDS
  # shellcheck disable=SC2086
  $MPIRUN -np "$ranks" "$EXAMPLE" --data-dir "$DATA_DIR" --epochs 1000 --batch "$batch" \
    --manifest "$MANIFEST_DIR/$manifest" --overrides "$overrides" "$@" >"$log" 2>&1 ||
    fail "exit $? from: fashion_mnist $* (log: $WORK/$log)"
  echo "  ok, $((SECONDS - start)) s"
}

check() { "$PYTHON" "$CHECK" "$@" || fail "ckpt_check.py $*"; }

latest_is() {
  [ -f "$1/latest" ] || fail "no $1/latest"
  local tag
  tag=$(tr -d '[:space:]' <"$1/latest")
  [ "$tag" = "$2" ] || fail "$1/latest names '$tag', expected '$2'"
  [ -f "$1/$2/metadata.json" ] || fail "$1/latest names $2, but there is no $1/$2/metadata.json"
}

resumed_from() {  # LOG DIR/TAG STEP: the run said it resumed there
  grep -qF "resumed from $2: global step $3 " "$1" || fail "$1 does not say 'resumed from $2: global step $3'"
}

# PID's descendants, children first (the ranks mpirun started), by parent pid only.
descendants() {
  local child
  for child in $(pgrep -P "$1"); do
    echo "$child"
    descendants "$child"
  done
}

# A process that has exited but is not yet reaped (state Z) is gone.
alive() { local s; s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ]; }

case $mode in
  equal)
    run full.log "$np" --max-steps "$total" --dump-params full.bin --loss-log full.loss
    run first.log "$np" --max-steps "$first" --save-dir ckpt --save-every "$save_every" \
      --dump-params first.bin
    last_save=$((first / save_every * save_every))
    latest_is ckpt "global_step$last_save"
    from=ckpt
    [ -z "$resume_tag" ] || from=ckpt/$resume_tag
    tag=${resume_tag:-global_step$last_save}
    at=${tag#global_step}
    run resumed.log "$np" --resume "$from" --max-steps "$total" --dump-params resumed.bin \
      --loss-log resumed.loss
    resumed_from resumed.log "ckpt/$tag" "$at"
    cmp full.bin resumed.bin || fail "parameters after $total steps differ: uninterrupted vs resumed at $at"
    check losses-equal full.loss resumed.loss $((at + 1)) "$total"
    echo "PASS: $total steps in one go = $first steps, resume from $tag, $((total - at)) steps (bitwise)"
    ;;

  reshard)
    manifest=zero3.json
    run ref.log 4 --max-steps "$total" --save-dir ckpt --save-every "$first" --loss-log ref.loss
    latest_is ckpt "global_step$first"
    [ -x "$CKPT_TOOL" ] || fail "strata-ckpt not built: $CKPT_TOOL"
    "$CKPT_TOOL" consolidate "ckpt/global_step$first" consolidated.safetensors >consolidate.log 2>&1 ||
      { logs+=(consolidate.log); fail "strata-ckpt consolidate failed"; }
    for target in "2 1" "1 0"; do
      set -- $target
      ranks=$1 stage=$2
      overrides="{\"zero_optimization\":{\"stage\":$stage}}"
      manifest=default.json
      # --max-steps at the checkpoint's step: load, no step, dump.
      run "loaded_np$ranks.log" "$ranks" --resume ckpt --max-steps "$first" \
        --dump-params "loaded_np$ranks.bin"
      resumed_from "loaded_np$ranks.log" "ckpt/global_step$first" "$first"
      check params-equal-safetensors "loaded_np$ranks.bin" consolidated.safetensors
      run "continued_np$ranks.log" "$ranks" --resume ckpt --max-steps "$total" \
        --loss-log "continued_np$ranks.loss"
      check losses-close ref.loss "continued_np$ranks.loss" $((first + 1)) "$total" 1e-6
    done
    echo "PASS: saved at 4 ranks stage 3, loaded at 2 ranks stage 1 and 1 rank stage 0"
    ;;

  precision)
    # Saved in fp16 at 2 ranks on stage 2, loaded in fp32 at 1 rank on stage 0: the parameters are
    # the fp32 masters. Saved in fp32, loaded in fp16 at 2 ranks on stage 3: the masters rounded.
    [ -x "$CKPT_TOOL" ] || fail "strata-ckpt not built: $CKPT_TOOL"
    fp16='"fp16":{"enabled":true}'
    for case in "fp16 2 fp32 0 1" "fp32 1 fp16 3 2"; do
      set -- $case
      from=$1 from_stage=$2 to=$3 to_stage=$4 to_ranks=$5
      patch() {  # PRECISION STAGE
        if [ "$1" = fp16 ]; then echo "{\"zero_optimization\":{\"stage\":$2},$fp16}"
        else echo "{\"zero_optimization\":{\"stage\":$2}}"; fi
      }
      overrides=$(patch "$from" "$from_stage")
      run "saved_$from.log" 2 --max-steps "$first" --save-dir "ckpt_$from" --save-every "$first"
      "$CKPT_TOOL" consolidate "ckpt_$from/global_step$first" "$from.safetensors" >consolidate.log 2>&1 ||
        { logs+=(consolidate.log); fail "strata-ckpt consolidate failed"; }
      overrides=$(patch "$to" "$to_stage")
      run "loaded_$to.log" "$to_ranks" --resume "ckpt_$from" --max-steps "$first" --dump-params "loaded_$to.bin"
      resumed_from "loaded_$to.log" "ckpt_$from/global_step$first" "$first"
      if [ "$to" = fp16 ]; then check params-equal-safetensors-f16 "loaded_$to.bin" "$from.safetensors"
      else check params-equal-safetensors "loaded_$to.bin" "$from.safetensors"; fi
      run "continued_$to.log" "$to_ranks" --resume "ckpt_$from" --max-steps "$total"
    done
    echo "PASS: fp16 stage 2 -> fp32 stage 0, fp32 stage 1 -> fp16 stage 3, parameters as saved"
    ;;

  killed)
    # The hook's byte count: 1.5 x the largest shard a save of this job writes, measured by one
    # save, so that each rank's first save completes and its second stops half-way (the count
    # runs over the process's shard writes).
    run calibrate.log "$np" --max-steps "$steps" --save-dir calibrate --save-every "$steps"
    largest=$(stat -c %s calibrate/global_step"$steps"/rank*.shard | sort -n | tail -1)
    [ -n "$largest" ] || fail "no shard files in calibrate/global_step$steps"
    pause=$((largest + largest / 2))
    echo "largest shard $largest bytes: pausing after $pause"
    logs+=(killed.log)
    echo "+ STRATA_TEST_SAVE_PAUSE_AFTER_BYTES=$pause mpirun -np $np fashion_mnist --save-every $steps --max-steps $((4 * steps))"
    # shellcheck disable=SC2086
    STRATA_TEST_SAVE_PAUSE_AFTER_BYTES=$pause $MPIRUN -x STRATA_TEST_SAVE_PAUSE_AFTER_BYTES \
      -np "$np" "$EXAMPLE" --data-dir "$DATA_DIR" --epochs 1000 --batch "$batch" \
      --manifest "$MANIFEST_DIR/$manifest" --overrides "$overrides" \
      --max-steps $((4 * steps)) --save-dir ckpt --save-every "$steps" >killed.log 2>&1 &
    mpirun_pid=$!
    for _ in $(seq 600); do
      grep -q "strata test hook: paused writing" killed.log && break
      alive "$mpirun_pid" || { wait "$mpirun_pid"; fail "the job ended (exit $?) before a save paused"; }
      sleep 0.1
    done
    grep -q "strata test hook: paused writing" killed.log || fail "no save paused within 60 s"
    grep "strata test hook: paused writing" killed.log
    ranks=$(descendants "$mpirun_pid")
    [ -n "$ranks" ] || fail "no processes under mpirun ($mpirun_pid)"
    echo "SIGKILL ranks $(echo $ranks) and mpirun $mpirun_pid"
    # shellcheck disable=SC2086
    kill -KILL $ranks "$mpirun_pid" 2>/dev/null
    wait "$mpirun_pid" 2>/dev/null
    for pid in $ranks; do
      for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
      alive "$pid" && fail "rank process $pid still alive after SIGKILL"
    done
    latest_is ckpt "global_step$steps"
    [ ! -e "ckpt/global_step$((2 * steps))" ] || fail "the killed save's folder ckpt/global_step$((2 * steps)) exists"
    ls -a ckpt
    killed_partial="ckpt/.global_step$((2 * steps)).partial"
    [ -d "$killed_partial" ] || fail "the killed save left no $killed_partial (was the kill mid-save?)"
    # Resumed from what survived, the run ends like one never interrupted; its own save clears
    # the killed save's leftovers.
    half=$((steps / 2))
    run resumed.log "$np" --resume ckpt --max-steps $((steps + half)) --dump-params resumed.bin \
      --save-dir ckpt --save-every "$half"
    resumed_from resumed.log "ckpt/global_step$steps" "$steps"
    latest_is ckpt "global_step$((steps + half))"
    [ ! -e "$killed_partial" ] || fail "the next save left the killed save's $killed_partial behind"
    run full.log "$np" --max-steps $((steps + steps / 2)) --dump-params full.bin
    cmp full.bin resumed.bin || fail "resumed after the kill, the parameters differ from an uninterrupted run"
    echo "PASS: a save killed part-way left global_step$steps as latest; resumed from it bitwise"
    ;;

  bad-setup)
    manifest=zero1.json  # every rank writes a shard
    run good.log 2 --max-steps 5 --save-dir good --save-every 5
    run other.log 2 --max-steps 5 --save-dir other_model --save-every 5 --hidden 128,64
    shard=global_step5/rank00001.shard
    for variant in truncated flipped missing newer; do cp -r good "$variant"; done
    check truncate "truncated/$shard"
    check flip "flipped/$shard" 4064  # inside the data section: a block's checksum fails
    rm "missing/$shard"
    check set-format-version newer/global_step5/metadata.json 99
    echo "PASS: bad checkpoints written under $WORK"
    ;;

  *) echo "resume_test.sh: unknown mode $mode"; exit 2 ;;
esac
