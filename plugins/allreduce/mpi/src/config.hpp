// The plugin's config object (the manifest's `comm.config`), validated.
#pragma once

#include <strata_common/shm_setup.hpp>

#include <cstdint>
#include <string>

namespace strata::allreduce_mpi {

struct Config {
  // Allreduces larger than this are issued as back-to-back pieces of this many bytes (for f16 and
  // bf16: bytes of the f32 accumulation buffer). Open MPI 4.1's allreduce of large messages is
  // much slower here than that of a few pieces in a row; the default and the measurements behind
  // it are in config.cpp.
  uint64_t chunk_bytes;
  // Blocking collectives first wait, without spinning, until every rank has arrived (see
  // MpiComm::arrival_gate), so that ranks waiting on a stalled peer sleep instead of each burning
  // a core inside Open MPI's busy-polling collectives. Costs one barrier's latency per collective.
  bool arrival_gate;
  // With the gate on, blocking collectives whose payload is below this run as MPI_I* calls waited
  // without spinning (polite_wait.hpp) instead of gate + blocking call: one exchange instead of
  // two, which is most of a small message's time across hosts. Default and figures: config.cpp.
  uint64_t arrival_gate_min_bytes;
  // When every rank runs on one host, collectives of at least shm.min_bytes (the caller's payload:
  // see Collectives) go through shared memory (plugins/common/shm) instead of MPI, in rounds of
  // shm.chunk_bytes per rank. shm.enabled false: MPI only.
  common::shm::Settings shm;
  // Over several hosts, allreduce, reduce_scatter and allgather in two levels (within hosts through
  // shared memory, across hosts by every local rank: plugins/common/shm's shm_two_level.hpp), or
  // through each host's first rank where the hosts hold different numbers of ranks
  // (MpiComm::hierarchical_allreduce). "on" (true), "off" (false), or "auto" (the default): the
  // two-level form where it runs (every host holding the same number of ranks, more than one,
  // shm not false, the host's shared-memory group set up), flat elsewhere (never through the
  // hosts' first ranks). Measured on 2 x 2 namespace hosts (bench/allreduce run_multinode.sh,
  // plugin-hier against plugin-mpi, 3 runs, 2026-12-08): the two-level allreduce 1.05-1.84x the
  // flat one from 1 MiB to 64 MiB. With the arrival gate on (the default), blocking calls below
  // arrival_gate_min_bytes (1 MiB) skip it and run flat as MPI_I* calls either way. Where "auto"
  // stays flat because the host's shared-memory group could not be set up, the host and cross
  // communicators MpiComm made are kept, unused.
  enum class Hierarchy { off, on, automatic };
  Hierarchy hierarchical = Hierarchy::automatic;
};

// The keys that decide what goes on the wire, as "chunk_bytes 1048576, arrival_gate true, ...":
// the same on every rank or create() fails (config::require_same_on_every_rank).
std::string wire_summary(const Config& config);

// Parses and validates `config_json` (NULL or "" mean {}). Throws sdk::Error with
// STRATA_ERR_INVALID_ARGUMENT naming the offending key.
Config parse_config(const char* config_json);

}  // namespace strata::allreduce_mpi
