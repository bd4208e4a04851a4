#!/usr/bin/env bash
# topology_test.sh — with_topology.sh leaves nothing behind: after a command that fails (its exit
# status comes back), after SIGTERM to the script (143, the command is ended too), and after
# SIGKILL (no trap runs: the next run removes the leftovers). "Nothing" means the two namespaces,
# the bridge, the veth ends in the root namespace and the scratch folder with the agent. Exits 77
# (SKIP) where with_topology.sh cannot build the network.
set -uo pipefail
topology=$(dirname "$0")/with_topology.sh
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

# Names of a run's pieces from its UTS name smn<pid>-a.
leftovers() {  # leftovers TAG -> prints what of TAG's topology still exists
  local tag=$1
  ip netns list | awk '{print $1}' | grep -E "^${tag}[ab]$"
  ip -o link show | sed -n "s/^[0-9]*: \(${tag}\(br\|a0\|b0\)\)[@:].*/\1/p"
}
record='echo "$STRATA_MN_NAME_A $STRATA_MN_DIR $$" >'

# 1. A failing command: its status comes back and everything is gone.
"$topology" -- sh -c "$record $work/run1; exit 3"
rc=$?
[[ $rc -eq 77 ]] && exit 77
[[ $rc -eq 3 ]] || fail "a command that exits 3: with_topology.sh exited $rc"
read -r name dir _ <"$work/run1"
tag=${name%-a}
[[ -z $(leftovers "$tag") ]] || fail "left after exit 3: $(leftovers "$tag" | tr '\n' ' ')"
[[ ! -e $dir ]] || fail "left after exit 3: $dir"
echo "exit 3: status passed on, $tag removed"

# 2. SIGTERM to the script while the command runs: the command ends, then the network.
"$topology" -- sh -c "$record $work/run2; sleep 60" &
pid=$!
for _ in $(seq 100); do [[ -s $work/run2 ]] && break; sleep 0.1; done
[[ -s $work/run2 ]] || fail "the second run did not start"
kill -TERM "$pid"
wait "$pid"
rc=$?
[[ $rc -eq 143 ]] || fail "SIGTERM: with_topology.sh exited $rc, not 143"
read -r name dir group <"$work/run2"
tag=${name%-a}
[[ -z $(leftovers "$tag") ]] || fail "left after SIGTERM: $(leftovers "$tag" | tr '\n' ' ')"
[[ ! -e $dir ]] || fail "left after SIGTERM: $dir"
# (an orphan killed with its group is a zombie until init reaps it: give that a moment)
for _ in $(seq 50); do kill -0 -- "-$group" 2>/dev/null || break; sleep 0.1; done
kill -0 -- "-$group" 2>/dev/null && fail "the command's process group $group outlived SIGTERM"
echo "SIGTERM: exit 143, command and its children ended, $tag removed"

# 3. SIGKILL: nothing runs then; the next run removes what the killed one left.
"$topology" -- sh -c "$record $work/run3; exec sleep 60" &
pid=$!
for _ in $(seq 100); do [[ -s $work/run3 ]] && break; sleep 0.1; done
[[ -s $work/run3 ]] || fail "the third run did not start"
read -r name dir sleeper <"$work/run3"
tag=${name%-a}
kill -KILL "$pid"
wait "$pid" 2>/dev/null
[[ -n $(leftovers "$tag") ]] || fail "SIGKILL left nothing: the check below would prove nothing"
kill -KILL "$sleeper" 2>/dev/null  # the orphaned command (sh exec'd sleep: same pid)
"$topology" -- true >/dev/null || fail "the run after SIGKILL failed"
[[ -z $(leftovers "$tag") ]] || fail "the next run left the killed run's $(leftovers "$tag" | tr '\n' ' ')"
[[ ! -e $dir ]] || fail "the next run left the killed run's $dir"
echo "SIGKILL: the next run removed $tag"
echo PASS
