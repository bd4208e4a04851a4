#!/usr/bin/env bash
# One fault test: starts 4 ranks of fault_host under mpirun, brings on a fault, and checks that
# every rank ends, in time, with a message naming the rank at fault, and that no process is left.
#
# usage: run_fault.sh MODE RANK   with MPIRUN (the mpirun command line), HOST (fault_host),
#        MANIFEST, WORK (a scratch folder) and, for plugin-fail, FAILING_PLUGIN in the environment.
# MODE: stop-external  SIGSTOP from outside at an arbitrary moment; warning 5 s, shutdown 15 s
#       stop-self      the rank stops itself in host code; also checks that waiting ranks sleep
#       kill           SIGKILL from outside
#       host-exit      the host exits (status 3) at step 200 without a word to the runtime
#       plugin-fail    the offload plugin fails on that rank at step 200
#       host-throw     the host throws at step 200; its Runtime is destroyed while unwinding
# With LAUNCHER_ENDS_JOB=0, mpirun is told not to end the job when a rank exits non-zero
# (orte_abort_on_non_zero_status 0), and the messages checked are Strata's alone: each other rank
# must have decided to end, naming the rank at fault.
set -u
mode=$1
bad=$2
ranks=4
rm -rf "$WORK" && mkdir -p "$WORK/pids" "$WORK/status"
log=$WORK/output.log
stall='{"stall_inspector": {"warning_seconds": 5, "shutdown_seconds": 15}}'
args=(--steps 1000000 --step-ms 5 --pid-dir "$WORK/pids")
limit_ms=10000
case $mode in
  stop-external) args+=(--overrides "$stall"); limit_ms=25000 ;;
  stop-self) args+=(--overrides "$stall" --stop-rank "$bad" --stop-step 200); limit_ms=25000 ;;
  kill) ;;
  host-exit) args+=(--exit-rank "$bad" --exit-step 200) ;;
  host-throw) args+=(--throw-rank "$bad" --throw-step 200) ;;
  plugin-fail)
    args+=(--overrides "{\"offload\": {\"library\": \"$FAILING_PLUGIN\", \"config\": {\"fail_rank\": $bad, \"fail_step\": 200}}}") ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
fail() {
  echo "FAIL: $*"
  echo "---- output ----"; cat "$log"
  for f in "$WORK"/pids/*.pid; do [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done
  kill -9 "$mpirun_pid" 2>/dev/null
  exit 1
}
pid_of() { cat "$WORK/pids/rank$1.pid"; }
# every_other_rank_says PATTERN WHAT: each rank but the one at fault logged an error matching
# PATTERN, in which RANK stands for that rank's number.
every_other_rank_says() {
  for r in $(seq 0 $((ranks - 1))); do
    [ "$r" = "$bad" ] && continue
    grep -q "\[strata rank $r\] ${1//RANK/$r}" "$log" || fail "rank $r $2"
  done
}
# Until the job's output has a line matching PATTERN (or the job has ended: the checks below then
# say what is missing).
wait_for_output() {
  until grep -q "$1" "$log"; do
    kill -0 "$mpirun_pid" 2>/dev/null || return 0
    sleep 0.05
  done
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

launcher=()
strata_only=0
if [ "${LAUNCHER_ENDS_JOB:-1}" = 0 ]; then
  launcher=(--mca orte_abort_on_non_zero_status 0)
  strata_only=1
fi
# Each rank runs under a shell that records its exit status (when the launcher lets it finish).
record='"$0" "$@"; echo $? > "'$WORK'/status/rank$OMPI_COMM_WORLD_RANK"'
# shellcheck disable=SC2086
$MPIRUN "${launcher[@]}" -np $ranks sh -c "$record" "$HOST" "$MANIFEST" "${args[@]}" >"$log" 2>&1 &
mpirun_pid=$!

start=$(now_ms)
while [ "$(ls "$WORK/pids" | wc -l)" -lt $ranks ]; do
  kill -0 $mpirun_pid 2>/dev/null || fail "the job ended before every rank started"
  [ $(( $(now_ms) - start )) -lt 120000 ] || fail "the ranks did not start within 120 s"
  sleep 0.1
done
victim=$(pid_of "$bad")
if [ "$mode" = stop-external ] || [ "$mode" = kill ]; then
  sleep 2  # mid-training
  kill -0 $mpirun_pid 2>/dev/null || fail "the job ended before the fault"
fi

case $mode in
  stop-external) kill -STOP "$victim"; t0=$(now_ms) ;;
  kill) kill -9 "$victim"; t0=$(now_ms) ;;
  stop-self)
    until [ "$(awk '{print $3}' "/proc/$victim/stat" 2>/dev/null)" = T ]; do
      kill -0 $mpirun_pid 2>/dev/null || fail "the job ended before rank $bad stopped itself"
      sleep 0.05
    done
    t0=$(now_ms) ;;
  host-exit)
    while kill -0 "$victim" 2>/dev/null; do sleep 0.05; done
    t0=$(now_ms) ;;
  host-throw) wait_for_output "simulated host error on rank $bad"; t0=$(now_ms) ;;
  plugin-fail) wait_for_output "simulated failure on rank $bad"; t0=$(now_ms) ;;
esac

if [ "$mode" = stop-self ]; then
  # Waiting ranks must sleep, not spin: CPU time over 3 s while the stopped rank holds them up.
  sleep 3
  declare -A before
  for r in $(seq 0 $((ranks - 1))); do [ "$r" = "$bad" ] || before[$r]=$(cpu_ticks "$(pid_of "$r")"); done
  sleep 3
  hz=$(getconf CLK_TCK)
  for r in "${!before[@]}"; do
    used=$(( $(cpu_ticks "$(pid_of "$r")") - before[$r] ))
    echo "rank $r used $used of $((3 * hz)) clock ticks while waiting"
    [ $(( used * 100 )) -le $(( 3 * hz * 25 )) ] || fail "rank $r used $used of $((3 * hz)) ticks (> 25% of a core) while waiting"
  done
fi

warned_ms=""
while kill -0 $mpirun_pid 2>/dev/null; do
  if [ -z "$warned_ms" ] && grep -q "\[warning\] stall: rank" "$log"; then warned_ms=$(( $(now_ms) - t0 )); fi
  [ $(( $(now_ms) - t0 )) -lt $(( limit_ms + 15000 )) ] || fail "the job was still running $(( limit_ms + 15000 )) ms after the fault"
  sleep 0.1
done
wait $mpirun_pid
rc=$?
took=$(( $(now_ms) - t0 ))
echo "mode $mode, rank $bad: mpirun exited with $rc, $took ms after the fault; rank exit statuses:" \
  "$(cd "$WORK/status" && grep -H . rank* 2>/dev/null | tr '\n' ' ')"
# With orte_abort_on_non_zero_status 0 mpirun's own status says nothing (it still ends the job
# when a rank exits without MPI_Finalize); the ranks' statuses and messages below do.
[ $strata_only = 1 ] || [ $rc -ne 0 ] || fail "mpirun exited 0"
for f in "$WORK"/status/rank*; do
  [ -f "$f" ] && [ "$(cat "$f")" = 0 ] && fail "$(basename "$f") exited 0"
done
[ $took -le $limit_ms ] || fail "the job took $took ms to end after the fault (limit $limit_ms)"

# A process that has exited but not yet been reaped (state Z) is gone; allow a moment for that.
alive() { local s; s=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null); [ -n "$s" ] && [ "$s" != Z ]; }
for r in $(seq 0 $((ranks - 1))); do
  pid=$(pid_of "$r")
  for _ in $(seq 30); do alive "$pid" || break; sleep 0.1; done
  if alive "$pid"; then fail "rank $r (pid $pid) is still there 3 s after mpirun exited"; fi
done

# What each rank said: the rank at fault is named.
case $mode in
  stop-external|stop-self)
    [ -n "$warned_ms" ] || warned_ms=$took
    echo "first stall warning seen $warned_ms ms after the stop"
    grep -m1 "\[warning\] stall: rank" "$log"
    grep -q "\[warning\] stall: rank [0-9]* has waited .*Not arrived: rank $bad: not responding" "$log" ||
      fail "no stall warning names rank $bad as not responding"
    [ "$warned_ms" -ge 4000 ] && [ "$warned_ms" -le 9000 ] || fail "the warning came $warned_ms ms after the stop, not about 5 s"
    # Every waiting rank warned, naming the stopped rank; the job ended with the stall message
    # (the first rank to end it makes the launcher end the others, which may not get to say so).
    every_other_rank_says "\[warning\] stall: rank RANK has waited .*Not arrived: rank $bad: not responding" \
      "did not warn that rank $bad is not responding"
    grep -q "\[error\] stall: rank [0-9]* has waited .*Not arrived: rank $bad: .*Ending the job: stall_inspector.shutdown_seconds is 15 s" "$log" ||
      fail "no rank ended the job with the stall message" ;;
  kill|host-exit)
    # Strata's watchdog ("rank 3 is gone") or the launcher (mpirun: "process rank 3 ... exited on
    # signal 9", or "Process name: [[job,1],3]" for a non-zero exit), whichever ended the job.
    if [ $strata_only = 1 ]; then
      every_other_rank_says "\[error\] rank $bad is gone (connection closed without a goodbye.*ending rank RANK too" \
        "did not end naming rank $bad as gone"
    else
      grep -q "rank $bad is gone\|process rank $bad with PID\|Process name: \[\[[0-9]*,[0-9]*\],$bad\]" "$log" ||
        fail "nothing names rank $bad"
    fi ;;
  host-throw)
    grep -q "^error: simulated host error on rank $bad at step 200" "$log" || fail "rank $bad's host did not report its error"
    every_other_rank_says "\[error\] rank $bad failed: its host destroyed the runtime while unwinding.*ending rank RANK too" \
      "did not end with rank $bad's message" ;;
  plugin-fail)
    grep -q "^error: .*simulated failure on rank $bad" "$log" || fail "rank $bad did not report its own failure"
    every_other_rank_says "\[error\] rank $bad failed: .*simulated failure on rank $bad.*ending rank RANK too" \
      "did not end with rank $bad's message" ;;
esac
echo "PASS"
