#!/usr/bin/env bash
# usage: run_failure.sh stall [ZERO_STAGE] | run_failure.sh plugin-fail
# A failure with the timeline on, 2 ranks of fault_host. Both modes check that the job ends
# non-zero, in time, without a merged trace, and that each rank the failure ended said where its
# events are and left PATH.rank<R>.json ending in a "failure" instant:
#   stall        rank 1 stops itself (SIGSTOP) at step 30; rank 0 waits in a collective until the
#                watchdog ends it (warning 1 s, shutdown 3 s). timeline_check --failure finds in
#                rank 0's file the collective the log's stall message names ("allreduce #N") and a
#                comm event of it (args.seq == N). No process may be left behind.
#   plugin-fail  the offload plugin fails on rank 1 at step 20 (its own strata_step fails; its host
#                reports the error and destroys the runtime); mpirun is told not to end the job on
#                a non-zero exit, so rank 0 is ended by Strata's watchdog on rank 1's failure. Both
#                ranks' files end in their messages.
#
# Environment: MPIRUN (the mpirun command line), HOST (fault_host), MANIFEST, WORK (a scratch
# folder), CHECK (timeline_check), and for plugin-fail FAILING_PLUGIN (the failing offload plugin).
set -u
mode=$1
rm -rf "$WORK" && mkdir -p "$WORK/pids"
trace=$WORK/trace.json
log=$WORK/output.log
fail() {
  echo "FAIL: $*"
  echo "---- output ----"; cat "$log"
  exit 1
}
case $mode in
  stall)
    stall='{"stall_inspector": {"warning_seconds": 1, "shutdown_seconds": 3}, "zero_optimization": {"stage": '${2:-0}'}}'
    launcher=()
    args=(--steps 1000000 --stop-rank 1 --stop-step 30 --overrides "$stall") ;;
  plugin-fail)
    launcher=(--mca orte_abort_on_non_zero_status 0)
    args=(--steps 1000 --overrides "{\"offload\": {\"library\": \"$FAILING_PLUGIN\", \"config\": {\"fail_rank\": 1, \"fail_step\": 20}}}") ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
# shellcheck disable=SC2086
STRATA_TIMELINE=$trace timeout 60 $MPIRUN "${launcher[@]}" -np 2 "$HOST" "$MANIFEST" --step-ms 2 \
  --pid-dir "$WORK/pids" "${args[@]}" >"$log" 2>&1
rc=$?
echo "mpirun exited with $rc"
[ "$rc" != 124 ] || fail "the job was still running after 60 s"
[ ! -e "$trace" ] || fail "a merged timeline was written although the job failed"
# said_where RANK LEVEL SENTENCE: rank RANK logged that its events are in PATH.rank<RANK>.json.
said_where() {
  grep -q "\[strata rank $1\] \[$2\] $3 $trace.rank$1.json" "$log" || fail "rank $1 did not say where its timeline is"
}

if [ "$mode" = stall ]; then
  # The watchdog ends the stopped rank with the job (SIGKILL); a process that has exited but is
  # not yet reaped (state Z) is gone. One still there after 3 s is ended here (only our own ranks).
  alive() { local s; s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ]; }
  left=""
  for f in "$WORK"/pids/*.pid; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    for _ in $(seq 30); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then left="$left $(basename "$f" .pid)"; kill -9 "$pid"; fi
  done
  [ "$rc" != 0 ] || fail "the job exited 0"
  [ -z "$left" ] || fail "left behind after mpirun exited:$left"
  grep -q "\[error\] stall: rank 0 has waited .*Ending the job" "$log" || fail "rank 0 did not end the job with the stall message"
  said_where 0 error "this rank's timeline, up to here:"
  [ -f "$trace.rank0.json" ] || fail "no $trace.rank0.json"
  "$CHECK" --failure "$trace.rank0.json" --log "$log" || fail "timeline_check --failure"
else
  grep -q "^error: .*simulated failure on rank 1" "$log" || fail "rank 1 did not report its own failure"
  said_where 1 info "timeline: this rank's events, up to its failure, are in"
  "$CHECK" --failure "$trace.rank1.json" --message "simulated failure on rank 1" || fail "rank 1's timeline"
  said_where 0 error "this rank's timeline, up to here:"
  "$CHECK" --failure "$trace.rank0.json" --message "rank 1 failed: " || fail "rank 0's timeline"
fi
echo "PASS"
