#!/usr/bin/env bash
# usage: run_stall.sh [ZERO_STAGE]   (default 0)
# A stall with the timeline on: 2 ranks of fault_host, rank 1 stops itself (SIGSTOP) at step 30,
# rank 0 waits in a collective until the watchdog ends it (warning 1 s, shutdown 3 s). Checks that
# the job ends non-zero, that rank 0 says where its timeline is and left PATH.rank0.json, and that
# timeline_check --failure finds in it the failure instant naming the collective the log's stall
# message names ("allreduce #N") and a comm event of that collective (args.seq == N).
#
# Environment: MPIRUN (the mpirun command line), HOST (fault_host), MANIFEST, WORK (a scratch
# folder), CHECK (timeline_check).
set -u
rm -rf "$WORK" && mkdir -p "$WORK/pids"
trace=$WORK/trace.json
log=$WORK/output.log
fail() {
  echo "FAIL: $*"
  echo "---- output ----"; cat "$log"
  exit 1
}
stage=${1:-0}
stall='{"stall_inspector": {"warning_seconds": 1, "shutdown_seconds": 3}, "zero_optimization": {"stage": '$stage'}}'
# shellcheck disable=SC2086
STRATA_TIMELINE=$trace timeout 60 $MPIRUN -np 2 "$HOST" "$MANIFEST" --steps 1000000 --step-ms 2 \
  --stop-rank 1 --stop-step 30 --pid-dir "$WORK/pids" --overrides "$stall" >"$log" 2>&1
rc=$?
# The watchdog ends the stopped rank with the job (SIGKILL); a process that has exited but is not
# yet reaped (state Z) is gone. One still there after 3 s is ended here (only our own ranks).
alive() { local s; s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ]; }
left=""
for f in "$WORK"/pids/*.pid; do
  [ -f "$f" ] || continue
  pid=$(cat "$f")
  for _ in $(seq 30); do alive "$pid" || break; sleep 0.1; done
  if alive "$pid"; then left="$left $(basename "$f" .pid)"; kill -9 "$pid"; fi
done
echo "mpirun exited with $rc"
[ "$rc" != 124 ] || fail "the job was still running after 60 s"
[ "$rc" != 0 ] || fail "the job exited 0"
[ -z "$left" ] || fail "left behind after mpirun exited:$left"
grep -q "\[error\] stall: rank 0 has waited .*Ending the job" "$log" || fail "rank 0 did not end the job with the stall message"
grep -q "\[strata rank 0\] \[error\] this rank's timeline, up to here: $trace.rank0.json" "$log" ||
  fail "rank 0 did not say where its timeline is"
[ -f "$trace.rank0.json" ] || fail "no $trace.rank0.json"
[ ! -e "$trace" ] || fail "a merged timeline was written although the job failed"
"$CHECK" --failure "$trace.rank0.json" --log "$log" || fail "timeline_check --failure"
echo "PASS"
