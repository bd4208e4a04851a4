#!/usr/bin/env bash
# topology_test.sh — with_topology.sh leaves nothing behind: after a command that fails (its exit
# status comes back), after SIGTERM to the script (143, the command is ended too), and after
# SIGKILL (no trap runs: the next run removes the leftovers). "Nothing" means the two namespaces,
# the bridge, the veth ends in the root namespace and the scratch folder with the agent. Exits 77
# (SKIP) where with_topology.sh cannot build the network. Also: STRATA_MN_LINK_RATE shapes both
# hosts' links (a tbf qdisc on each eth0, announced to the command), and a rate tc cannot read
# fails the run naming the variable, with nothing left behind.
set -uo pipefail
# Cases 1-3 run on unshaped links whatever the caller exported; case 4 sets its own.
unset STRATA_MN_LINK_RATE STRATA_MN_LINK_DELAY
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

# 4. A shaped link: each host's eth0 carries a tbf at the rate; a bad rate is named, not ignored.
# A kernel without the tbf qdisc skips this case (saying so): the benchmark's shaping cannot run
# there, and with_topology.sh refuses it rather than run unshaped.
shown='for ns in $(ip netns list | awk "{print \$1}" | grep -E "^${STRATA_MN_NAME_A%-a}[ab]$"); do
         tc -n "$ns" qdisc show dev eth0; done; echo "link: $STRATA_MN_LINK"'
out=$(STRATA_MN_LINK_RATE=1gbit "$topology" -- bash -c "$shown" 2>&1)
rc=$?
if [[ $rc -ne 0 && $out == *"Specified qdisc kind is unknown"* ]]; then
  echo "rate 1gbit: SKIPPED, this kernel has no tbf qdisc ($out)"
else
  [[ $rc -eq 0 ]] || fail "a 1gbit link: $out"
  [[ $(grep -c "qdisc tbf .* rate 1Gbit" <<<"$out") -eq 2 ]] || fail "no tbf at 1Gbit on both hosts: $out"
  grep -q "^link: rate 1gbit$" <<<"$out" || fail "the command was not told the link: $out"
  echo "rate 1gbit: a tbf on both hosts' eth0"
fi
# (RUN_SERIAL: no other topology comes or goes meanwhile)
pieces() {
  ip netns list | grep -c "^smn"
  ip -o link show | grep -c ": smn"
  find "${TMPDIR:-/tmp}" -maxdepth 1 -name 'strata-multinode.*' | wc -l
}
before=$(pieces)
out=$(STRATA_MN_LINK_RATE=fast "$topology" -- sh -c "$record $work/run5" 2>&1)
rc=$?
[[ $rc -eq 1 && $out == *"STRATA_MN_LINK_RATE='fast'"* ]] || fail "a bad rate: exit $rc, $out"
[[ ! -e $work/run5 ]] || fail "the command ran on a link that was not shaped"
[[ $(pieces) == "$before" ]] || fail "a bad rate left namespaces, links or a scratch folder behind"
echo "rate fast: refused naming STRATA_MN_LINK_RATE"
echo PASS
