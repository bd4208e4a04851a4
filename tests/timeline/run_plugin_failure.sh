#!/usr/bin/env bash
# A failure with the timeline on: 2 ranks of fault_host, the offload plugin fails on rank 1 at step
# 20 (its own strata_step fails, its host reports the error and destroys the runtime); mpirun is
# told not to end the job on a non-zero exit, so rank 0 is ended by Strata's watchdog on rank 1's
# failure. Checks that the job ends non-zero, that no merged trace is written, and that each rank
# said where its events are and left PATH.rank<R>.json ending in a failure instant with its message.
#
# Environment: MPIRUN (the mpirun command line), HOST (fault_host), MANIFEST, WORK (a scratch
# folder), CHECK (timeline_check), FAILING_PLUGIN (the failing offload plugin).
set -u
rm -rf "$WORK" && mkdir -p "$WORK/pids"
trace=$WORK/trace.json
log=$WORK/output.log
fail() {
  echo "FAIL: $*"
  echo "---- output ----"; cat "$log"
  exit 1
}
patch="{\"offload\": {\"library\": \"$FAILING_PLUGIN\", \"config\": {\"fail_rank\": 1, \"fail_step\": 20}}}"
# shellcheck disable=SC2086
STRATA_TIMELINE=$trace timeout 60 $MPIRUN --mca orte_abort_on_non_zero_status 0 -np 2 "$HOST" "$MANIFEST" \
  --steps 1000 --step-ms 2 --pid-dir "$WORK/pids" --overrides "$patch" >"$log" 2>&1
rc=$?
echo "mpirun exited with $rc"
[ "$rc" != 124 ] || fail "the job was still running after 60 s"
[ ! -e "$trace" ] || fail "a merged timeline was written although the job failed"
grep -q "^error: .*simulated failure on rank 1" "$log" || fail "rank 1 did not report its own failure"
grep -q "\[strata rank 1\] \[info\] timeline: this rank's events, up to its failure, are in $trace.rank1.json" "$log" ||
  fail "rank 1 did not say where its timeline is"
"$CHECK" --failure "$trace.rank1.json" --message "simulated failure on rank 1" || fail "rank 1's timeline"
grep -q "\[strata rank 0\] \[error\] this rank's timeline, up to here: $trace.rank0.json" "$log" ||
  fail "rank 0 did not say where its timeline is"
"$CHECK" --failure "$trace.rank0.json" --message "rank 1 failed: " || fail "rank 0's timeline"
echo "PASS"
