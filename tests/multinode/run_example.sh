#!/usr/bin/env bash
# run_example.sh LAUNCH [options] — trains the Fashion-MNIST example for a few steps on 4 ranks,
# launched one way, and compares its final parameters with a reference run's.
#
#   LAUNCH
#     reference          plain mpirun -np 4 on this host, the manifest as it is; writes
#                        --reference (the other launches compare against it)
#     mpirun-2x2         plain mpirun, 2 hosts x 2 slots through the topology's launch agent
#     strata-run-2x2     strata-run -H A:2,B:2 --backend B --launch-agent AGENT
#     strata-run-local   strata-run -np 4 --backend B on this host
#   The 2x2 launches run inside tests/multinode/with_topology.sh (STRATA_MN_* set).
#
#   options
#     --example EXE --compare COMPARE_EXAMPLE_PARAMS --data-dir DIR --work-dir DIR --reference FILE
#     --manifest FILE --steps N --tolerance T --mpirun "mpirun,args,..." (comma-separated)
#     --strata-run EXE --backend mpi|gloo --overrides JSON (the example's merge patch)
#     --expect REGEX (grep -E, must match the run's output; may be repeated)
#
# Every launch must exit 0 and report ZeRO stage 0. The non-reference launches must end with
# parameters within --tolerance of the reference's, per tensor (compare_example_params: max
# |a - b| / max |a| over each tensor), and the 2x2 launches must have started processes on both
# hosts through the agent (its log). --expect adds checks on the output (e.g. that the comm
# plugin saw the ranks span two hosts).
set -uo pipefail

launch=${1:?usage: run_example.sh LAUNCH [options]}
shift
example="" compare="" data_dir="" work="" reference="" manifest="" steps=20 tolerance=1e-6
mpirun_list="" strata_run="" backend="" overrides=""
expects=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --example) example=$2 ;;
    --compare) compare=$2 ;;
    --data-dir) data_dir=$2 ;;
    --work-dir) work=$2 ;;
    --reference) reference=$2 ;;
    --manifest) manifest=$2 ;;
    --steps) steps=$2 ;;
    --tolerance) tolerance=$2 ;;
    --mpirun) mpirun_list=$2 ;;
    --strata-run) strata_run=$2 ;;
    --backend) backend=$2 ;;
    --overrides) overrides=$2 ;;
    --expect) expects+=("$2") ;;
    *) echo "run_example.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift 2
done
fail() {
  echo "FAIL ($launch${backend:+, backend $backend}): $*"
  exit 1
}
[[ -n $example && -n $data_dir && -n $work && -n $reference && -n $manifest ]] ||
  fail "missing one of --example --data-dir --work-dir --reference --manifest"
IFS=, read -r -a mpirun <<<"$mpirun_list"

mkdir -p "$work"
dump=$work/params.bin
[[ $launch == reference ]] && dump=$reference
rm -f "$dump"
log=$work/output.log
args=(--manifest "$manifest" --seed 1 --data-dir "$data_dir" --epochs 1 --max-steps "$steps"
      --dump-params "$dump")
[[ -n $overrides ]] && args+=(--overrides "$overrides")

need_topology() {
  [[ -n ${STRATA_MN_AGENT:-} ]] || fail "run it inside with_topology.sh (no STRATA_MN_AGENT)"
}
need_strata_run() {
  [[ -x $strata_run ]] || fail "no strata-run at '$strata_run'"
  [[ $backend == mpi || $backend == gloo ]] || fail "--backend must be mpi or gloo"
}

case $launch in
  reference)
    command=("${mpirun[@]}" -np 4 "$example" "${args[@]}")
    ;;
  mpirun-2x2)
    need_topology
    command=("${mpirun[@]}" -H "$STRATA_MN_HOST_A:2,$STRATA_MN_HOST_B:2" -np 4 --bind-to none
             --mca mpi_yield_when_idle 1
             --mca plm_rsh_agent "$STRATA_MN_AGENT"
             --mca btl_tcp_if_include "$STRATA_MN_SUBNET" --mca oob_tcp_if_include "$STRATA_MN_SUBNET"
             -x OPENBLAS_NUM_THREADS "$example" "${args[@]}")
    ;;
  strata-run-2x2)
    need_topology
    need_strata_run
    command=("$strata_run" -H "$STRATA_MN_HOST_A:2,$STRATA_MN_HOST_B:2" --backend "$backend"
             --launch-agent "$STRATA_MN_AGENT" --network-interface "$STRATA_MN_SUBNET"
             -x OPENBLAS_NUM_THREADS -- "$example" "${args[@]}")
    ;;
  strata-run-local)
    need_strata_run
    command=("$strata_run" -np 4 --backend "$backend" -x OPENBLAS_NUM_THREADS --
             "$example" "${args[@]}")
    ;;
  *) fail "unknown launch '$launch'" ;;
esac

echo "+ ${command[*]}"
start=$SECONDS
"${command[@]}" >"$log" 2>&1 </dev/null
rc=$?
cat "$log"
echo "# $launch: exit $rc after $((SECONDS - start)) s"
[[ $rc -eq 0 ]] || fail "the example exited with $rc"
grep -q "stage=0 " "$log" || fail "the runtime did not report stage=0"
grep -Eq "epoch 1/1 +step $steps " "$log" || fail "no 'epoch 1/1 step $steps' line: it did not train $steps steps"
for regex in "${expects[@]}"; do
  grep -Eq -- "$regex" "$log" || fail "the output has no line matching '$regex'"
done
[[ -s $dump ]] || fail "no parameter dump at $dump"

if [[ $launch == *-2x2 ]]; then
  for host in "$STRATA_MN_HOST_A" "$STRATA_MN_HOST_B"; do
    grep -q "^$host " "$STRATA_MN_AGENT_LOG" ||
      fail "nothing was started on $host through the launch agent (agent log: $(tr '\n' ';' <"$STRATA_MN_AGENT_LOG"))"
  done
  echo "# agent launches: $(tr '\n' ';' <"$STRATA_MN_AGENT_LOG")"
fi

if [[ $launch != reference ]]; then
  [[ -s $reference ]] || fail "no reference dump at $reference (the multinode.reference test writes it)"
  [[ -x $compare ]] || fail "no compare_example_params at '$compare'"
  "$compare" "$reference" "$dump" "$tolerance" ||
    fail "parameters differ from plain mpirun -np 4 by more than $tolerance (tensor-relative)"
fi
echo "PASS ($launch${backend:+, backend $backend})"
