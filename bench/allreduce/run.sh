#!/usr/bin/env bash
# Usage: bench/allreduce/run.sh <build-dir> [bench options]
#   e.g. run.sh build --shm-config '{"shm_chunk_bytes": 131072}' --min-bytes 1048576
# Runs the allreduce benchmark (raw MPI_Allreduce, the plugin's MPI path, the plugin's shared-
# memory path) with 2 and then 4 ranks, prints both tables, and ends with one headline line:
#   shm_vs_mpi_16mib_up  lowest plugin-shm/MPI bus bandwidth ratio from 16 MiB up, both runs
#   shm_vs_mpi_min       lowest plugin-shm/MPI ratio over every size, both runs
#   plugin_vs_mpi_min    lowest plugin-mpi/MPI ratio from 1 MiB up, both runs (the old key)
# Extra mpirun options (e.g. --bind-to none) can be given in STRATA_BENCH_MPIRUN_ARGS.
# On a shared machine, run it as `chrt -r 1 bench/allreduce/run.sh build` (the ranks inherit
# SCHED_RR) or concurrent builds dominate the figures. Mind that mpirun binds each of 2 ranks to
# one core: the plugin then sees one usable CPU per rank and its shm waits sleep instead of spin
# (its create() line, printed as "# plugin: ...", says which).
set -euo pipefail
build=${1:?usage: run.sh <build-dir> [bench options]}
shift
bench="$build/bin/strata_allreduce_bench"
if [[ ! -x $bench ]]; then
  echo "run.sh: $bench not found; build the target strata_allreduce_bench" >&2
  exit 1
fi
read -r -a extra <<< "${STRATA_BENCH_MPIRUN_ARGS:-}"

# The lower of two figures ("nan" when a run did not cover the key's sizes).
lower() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || a == "nan") print b; else if (b == "" || b == "nan") print a; else print (a + 0 < b + 0 ? a : b) }'
}

shm16="" shmmin="" plugin=""
for np in 2 4; do
  # btl_vader_single_copy_mechanism none: Open MPI's shared-memory transport copies through its
  # own shared buffers (copy-in/copy-out) instead of single-copy CMA (process_vm_readv). Kept as
  # the comparison baseline: it is what the figures in plugins/allreduce/mpi/src/config.cpp were
  # measured against, and it is the same everywhere, whereas CMA needs ptrace permission between
  # the ranks, which containers often withhold (vader then warns or fails on large messages).
  out=$(mpirun --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none \
    "${extra[@]}" -np "$np" "$bench" "$@")
  echo "$out" | grep -v '^headline'
  line=$(echo "$out" | grep '^headline ' || true)
  [[ -n $line ]] || { echo "run.sh: no headline from the $np-rank run" >&2; exit 1; }
  key() { echo "$line" | sed -n "s/.* $1=\([0-9.a-z]*\).*/\1/p"; }
  echo "ranks=$np shm_vs_mpi_16mib_up=$(key shm_vs_mpi_16mib_up) shm_vs_mpi_min=$(key shm_vs_mpi_min) plugin_vs_mpi_min=$(key plugin_vs_mpi_min)"
  echo
  shm16=$(lower "$shm16" "$(key shm_vs_mpi_16mib_up)")
  shmmin=$(lower "$shmmin" "$(key shm_vs_mpi_min)")
  plugin=$(lower "$plugin" "$(key plugin_vs_mpi_min)")
done
echo "headline shm_vs_mpi_16mib_up=${shm16:-nan} shm_vs_mpi_min=${shmmin:-nan} plugin_vs_mpi_min=${plugin:-nan}"
