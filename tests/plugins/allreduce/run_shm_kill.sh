#!/usr/bin/env bash
# A rank killed mid-collective on the shared-memory path (shm_kill.cpp, 3 ranks, rank 1 SIGKILLs
# itself): the job must end within 20 s (no hang) with a non-zero status, and /dev/shm must hold
# no segment of this job (strata-shm-<uid>-<pid>-* for any of its ranks' pids). With
# LAUNCHER_ENDS_JOB=0 (mpirun only) mpirun is told not to end the job when a rank exits non-zero,
# and both survivors must have ended themselves within 20 s with the plugin's "exited before it
# reached" message naming rank 1. (Open MPI 4.1's mpirun then does not exit by itself after a rank died of
# a signal, so in that mode the ranks' processes are what must end; mpirun is then ended here.)
#
# usage: run_shm_kill.sh   with LAUNCH (the launcher's command line for 3 ranks, up to the program:
# "mpirun ... -np 3" or "strata-run --backend gloo -np 3 --"), PROGRAM (shm_kill built for the
# plugin) and WORK (a scratch folder) in the environment.
set -u
rm -rf "$WORK" && mkdir -p "$WORK"
log=$WORK/output.log
launcher=()
[ "${LAUNCHER_ENDS_JOB:-1}" = 0 ] && launcher=(--mca orte_abort_on_non_zero_status 0)

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Whether process $1 runs (a zombie does not).
alive() { [ -e "/proc/$1" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
rank_pids() { sed -n 's/^shm_kill: rank [0-9]* pid \([0-9]*\)$/\1/p' "$log"; }
fail() {
  echo "FAIL: $*"
  echo "---- output ----"; cat "$log"
  for p in $(rank_pids); do kill -9 "$p" 2>/dev/null; done
  kill -9 "$launcher_pid" 2>/dev/null
  exit 1
}

# shellcheck disable=SC2086
$LAUNCH "${launcher[@]}" "$PROGRAM" >"$log" 2>&1 &
launcher_pid=$!
# The clock starts once every rank is in its loop (start-up under load can take a while).
start=$(now_ms)
until [ "$(rank_pids | wc -l)" -ge 3 ]; do
  kill -0 $launcher_pid 2>/dev/null || break
  [ $(( $(now_ms) - start )) -lt 120000 ] || fail "the ranks did not start within 120 s"
  sleep 0.05
done
ranks_run() { for p in $(rank_pids); do alive "$p" && return 0; done; return 1; }
start=$(now_ms)
if [ "${LAUNCHER_ENDS_JOB:-1}" = 0 ]; then
  while ranks_run; do
    [ $(( $(now_ms) - start )) -lt 20000 ] || fail "the ranks did not end within 20 s of starting (hang)"
    sleep 0.05
  done
  elapsed=$(( $(now_ms) - start ))
  kill "$launcher_pid" 2>/dev/null
  wait $launcher_pid
  rc=1
else
  while kill -0 $launcher_pid 2>/dev/null; do
    [ $(( $(now_ms) - start )) -lt 20000 ] || fail "the job did not end within 20 s of starting (hang)"
    sleep 0.05
  done
  wait $launcher_pid
  rc=$?
  elapsed=$(( $(now_ms) - start ))
fi

[ "$(rank_pids | wc -l)" = 3 ] || fail "expected 3 ranks to print their pid"
grep -q "shm on (" "$log" || fail "the shared-memory path was not on"
[ "$rc" != 0 ] || fail "the launcher returned 0 although rank 1 was killed"
# A rank that is still exiting as the launcher returns gets a moment.
for p in $(rank_pids); do
  for _ in $(seq 40); do alive "$p" || break; sleep 0.05; done
  alive "$p" && fail "rank pid $p still runs"
  left=$(ls /dev/shm 2>/dev/null | grep "^strata-shm-$(id -u)-$p-")
  [ -z "$left" ] && continue
  fail "segment(s) left in /dev/shm: $left"
done
survivor_said=no
grep -q "over shared memory: rank 1 (pid [0-9]*, same host) exited before it reached" "$log" &&
  survivor_said=yes
if [ "${LAUNCHER_ENDS_JOB:-1}" = 0 ]; then
  for r in 0 2; do
    grep -q "^shm_kill: rank $r: allreduce failed: allreduce over shared memory: rank 1 (pid [0-9]*, same host) exited before it reached" "$log" ||
      fail "rank $r did not report that rank 1 exited before it reached the collective"
  done
fi
echo "ok: the job ended in ${elapsed} ms with status $rc; no segment left; survivor reported: $survivor_said"
grep "exited before it reached" "$log" | head -2
