#!/usr/bin/env bash
# Usage: bench/allreduce/run.sh <build-dir> [bench options]
#   e.g. run.sh build --shm-config '{"shm_chunk_bytes": 131072}' --min-bytes 1048576
# Runs the allreduce benchmark (raw MPI_Allreduce, the MPI plugin's MPI path, its shared-memory
# path, and the gloo plugin as configured by default (shared memory on one host), over TCP only and
# hierarchical, the last two up to 64 MiB, when it is built) with 2 and then 4 ranks, prints both
# tables, and ends with one headline line:
#   shm_vs_mpi_16mib_up  lowest plugin-shm/MPI bus bandwidth ratio from 16 MiB up, both runs
#   shm_vs_mpi_min       lowest plugin-shm/MPI ratio over every size, both runs
#   plugin_vs_mpi_min    lowest plugin-mpi/MPI ratio from 1 MiB up, both runs (the old key)
#   gloo_vs_mpi_min      lowest gloo (default config)/MPI ratio over every size, both runs ("nan":
#                        no gloo)
#   gloo_tcp_vs_mpi_min  lowest gloo over TCP only/MPI ratio up to 64 MiB, both runs
#   example_gloo_vs_mpi  the example's samples/s at 4 ranks over strata-run --backend gloo / mpi
#   shm_vs_deepspeed_min lowest plugin-shm/DeepSpeed bus bandwidth ratio from 64 KiB up, 2 and 4
#                        ranks: DeepSpeed's shared-memory allreduce (peer_allreduce.py, run by
#                        PEER_PYTHON, a Python with deepspeed and torch) in DS_ROUNDS rounds
#                        (default 3) alternating with the bench's plugin-shm, medians per size;
#                        both in place on a buffer refilled before each call (--in-place), as
#                        DeepSpeed's inference_all_reduce works;
#                        "nan" (and a line saying why) without PEER_PYTHON or when DeepSpeed's
#                        shared-memory kernel cannot run
# The gloo plugin meets its peers through rank 0's store: MASTER_ADDR, MASTER_PORT (and the two
# ports above it, for the hierarchical and TCP-only instances) and STRATA_JOB_SECRET. When they are not set already
# (strata-run --backend mpi sets them), this script sets 127.0.0.1, a free port and a fresh
# secret. Extra mpirun options (e.g. --bind-to none) can be given in STRATA_BENCH_MPIRUN_ARGS.
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

# A TCP port on 127.0.0.1 nobody listens on, nor on the two ports above it (connect is refused),
# below the kernel's ephemeral range: Gloo's connections leave their ephemeral ports in TIME_WAIT,
# and a listening socket cannot take such a port (seen: "MASTER_PORT 34668 ... is in use").
free_port() {
  local port low
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range || low=32768
  for _ in $(seq 50); do
    port=$((10000 + RANDOM % (low - 10003)))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null &&
       ! (exec 3<>"/dev/tcp/127.0.0.1/$((port + 1))") 2>/dev/null &&
       ! (exec 3<>"/dev/tcp/127.0.0.1/$((port + 2))") 2>/dev/null; then
      echo "$port"
      return
    fi
  done
  echo "run.sh: no free port found" >&2
  exit 1
}
export MASTER_ADDR=${MASTER_ADDR:-127.0.0.1}
export STRATA_JOB_SECRET=${STRATA_JOB_SECRET:-$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')}
fixed_port=${MASTER_PORT:-}

# The lower of two figures ("nan" when a run did not cover the key's sizes).
lower() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || a == "nan") print b; else if (b == "" || b == "nan") print a; else print (a + 0 < b + 0 ? a : b) }'
}

# mpirun as every run here starts it: see the comment on btl_vader_single_copy_mechanism below.
launch() {  # np command...
  local np=$1
  shift
  mpirun --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none \
    -x MASTER_ADDR -x MASTER_PORT -x STRATA_JOB_SECRET "${extra[@]}" -np "$np" "$@"
}
set_port() {
  if [[ -n $fixed_port ]]; then MASTER_PORT=$fixed_port; else MASTER_PORT=$(free_port); fi
  export MASTER_PORT
}

shm16="" shmmin="" plugin="" gloo="" gloo_tcp=""
for np in 2 4; do
  set_port
  # btl_vader_single_copy_mechanism none: Open MPI's shared-memory transport copies through its
  # own shared buffers (copy-in/copy-out) instead of single-copy CMA (process_vm_readv). Kept as
  # the comparison baseline: it is what the figures in plugins/allreduce/mpi/src/config.cpp were
  # measured against, and it is the same everywhere, whereas CMA needs ptrace permission between
  # the ranks, which containers often withhold (vader then warns or fails on large messages).
  out=$(launch "$np" "$bench" "$@")
  echo "$out" | grep -v '^headline'
  line=$(echo "$out" | grep '^headline ' || true)
  [[ -n $line ]] || { echo "run.sh: no headline from the $np-rank run" >&2; exit 1; }
  key() { echo "$line" | sed -n "s/.* $1=\([0-9.a-z+-]*\).*/\1/p"; }
  echo "ranks=$np shm_vs_mpi_16mib_up=$(key shm_vs_mpi_16mib_up) shm_vs_mpi_min=$(key shm_vs_mpi_min) plugin_vs_mpi_min=$(key plugin_vs_mpi_min) gloo_vs_mpi_min=$(key gloo_vs_mpi_min) gloo_tcp_vs_mpi_min=$(key gloo_tcp_vs_mpi_min)"
  echo
  shm16=$(lower "$shm16" "$(key shm_vs_mpi_16mib_up)")
  shmmin=$(lower "$shmmin" "$(key shm_vs_mpi_min)")
  plugin=$(lower "$plugin" "$(key plugin_vs_mpi_min)")
  gloo=$(lower "$gloo" "$(key gloo_vs_mpi_min)")
  gloo_tcp=$(lower "$gloo_tcp" "$(key gloo_tcp_vs_mpi_min)")
done
# The example (Fashion-MNIST MLP, 4 ranks, EXAMPLE_EPOCHS epochs, default 2) under strata-run
# --backend gloo against --backend mpi, runs alternating (EXAMPLE_ROUNDS pairs, default 2):
# example_gloo_vs_mpi = median samples/s of the last epoch over Gloo / the same over MPI. "nan"
# when the example or Debian's dataset-fashion-mnist is missing.
example="$build/bin/fashion_mnist" launcher="$build/bin/strata-run"
example_ratio=nan
if [[ -x $example && -x $launcher && -e /usr/share/datasets/fashion-mnist ]]; then
  last_epoch_rate() {  # backend
    OPENBLAS_NUM_THREADS=1 "$launcher" --backend "$1" -np 4 -- "$example" \
      --epochs "${EXAMPLE_EPOCHS:-2}" 2>&1 | sed -n 's/.*samples\/s \([0-9]*\).*/\1/p' | tail -1
  }
  rates_mpi=() rates_gloo=()
  for _ in $(seq "${EXAMPLE_ROUNDS:-2}"); do
    rates_mpi+=("$(last_epoch_rate mpi)")
    rates_gloo+=("$(last_epoch_rate gloo)")
  done
  median_of() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
  m_mpi=$(median_of "${rates_mpi[@]}") m_gloo=$(median_of "${rates_gloo[@]}")
  echo "example (fashion_mnist, 4 ranks): samples/s of the last epoch, mpi ${rates_mpi[*]}, gloo ${rates_gloo[*]}"
  example_ratio=$(awk -v g="$m_gloo" -v m="$m_mpi" 'BEGIN { if (m > 0 && g > 0) printf "%.2f", g / m; else print "nan" }')
else
  echo "example: not run (needs $example, $launcher and dataset-fashion-mnist)"
fi

# DeepSpeed's shared-memory allreduce beside plugin-shm, rounds alternating (the two cannot share
# a process): per size the median of each over the rounds, then plugin-shm / DeepSpeed.
ds_ratio=nan
peer="$(dirname "$0")/peer_allreduce.py"
if [[ -z ${PEER_PYTHON:-} ]]; then
  echo "deepspeed: not run (set PEER_PYTHON to a Python with deepspeed and torch)"
elif ! "$PEER_PYTHON" -c "import deepspeed, torch" > /dev/null 2>&1; then
  echo "deepspeed: not run ($PEER_PYTHON cannot import deepspeed and torch)"
else
  rounds_file=$(mktemp)
  trap 'rm -f "$rounds_file"' EXIT
  ds_failed=""
  for np in 2 4; do
    for round in $(seq "${DS_ROUNDS:-3}"); do
      set_port
      launch "$np" "$bench" --shm-only --in-place --min-bytes 65536 |
        awk -v np="$np" -v round="$round" '$1 ~ /^[0-9]+$/ { print np, "strata", $1, $4 }' >> "$rounds_file"
      set_port
      ds_ok=1
      launch "$np" "$PEER_PYTHON" "$peer" --impl deepspeed-shm --min-bytes 65536 > "$rounds_file.ds" 2>&1 || ds_ok=""
      # DeepSpeed leaves its shared-memory buffers (66 MiB per rank) in /dev/shm; over a few runs
      # they filled 7 GB of this machine's memory. Its names carry the run's address and port.
      rm -f /dev/shm/deepspeed_allreduce_buffer_*_"$MASTER_ADDR"_"$MASTER_PORT"_*
      if [[ -z $ds_ok ]]; then
        grep -E "^deepspeed:|WRONG" "$rounds_file.ds" || tail -5 "$rounds_file.ds"
        echo "deepspeed: the $np-rank run failed"
        ds_failed=1
        rm -f "$rounds_file.ds"
        break 2
      fi
      awk -v np="$np" '$1 == "deepspeed-shm" { print np, "deepspeed", $2, $3 }' "$rounds_file.ds" >> "$rounds_file"
      rm -f "$rounds_file.ds"
    done
  done
  # Per (ranks, size): the median busbw of each side over the rounds, and their ratio.
  table=""
  [[ -n $ds_failed ]] || table=$(sort -k1,1n -k3,3n -k2,2 "$rounds_file" | awk '
    function median(list,   n, v, i, j, t) {
      n = split(list, v, " ")
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
      return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    { key = $1 " " $3; seen[key] = 1; all[key, $2] = all[key, $2] " " $4 }
    END {
      for (key in seen) {
        s = median(all[key, "strata"]); d = median(all[key, "deepspeed"])
        printf "%s %.4g %.4g %s\n", key, s, d, (d > 0 ? sprintf("%.2f", s / d) : "nan")
      }
    }' | sort -k1,1n -k2,2n)
  if [[ -n $table ]]; then
    echo "plugin-shm vs DeepSpeed's shared-memory allreduce (f32 SUM, busbw GB/s, median of ${DS_ROUNDS:-3} alternating rounds)"
    printf '%6s %12s %12s %12s %8s\n' ranks bytes plugin-shm deepspeed shm/ds
    echo "$table" | awk '{ printf "%6s %12s %12s %12s %8s\n", $1, $2, $3, $4, $5 }'
    ds_ratio=$(echo "$table" | awk '$5 == "nan" { bad = 1 } NR == 1 || $5 + 0 < m { m = $5 + 0 }
                                    END { if (bad || NR == 0) print "nan"; else printf "%.2f", m }')
  fi
fi

echo "headline shm_vs_mpi_16mib_up=${shm16:-nan} shm_vs_mpi_min=${shmmin:-nan} plugin_vs_mpi_min=${plugin:-nan} gloo_vs_mpi_min=${gloo:-nan} gloo_tcp_vs_mpi_min=${gloo_tcp:-nan} example_gloo_vs_mpi=$example_ratio shm_vs_deepspeed_min=$ds_ratio"
