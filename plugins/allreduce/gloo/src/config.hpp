// The plugin's config object (the manifest's `comm.config`), validated.
#pragma once

#include <strata_common/shm_setup.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace strata::allreduce_gloo {

struct Config {
  // Bounds the rendezvous (every rank must arrive within it) and every collective (a peer that
  // stops answering fails the call instead of hanging it).
  std::chrono::milliseconds timeout{30000};
  // The algorithm for flat allreduces over TCP (and the two-level path's cross-host step):
  // Gloo's ring (2(n-1) steps, each with 1/n of the data) or bcube (log2 n exchanges), or the
  // plugin's direct allreduce (direct_allreduce.hpp: at 2 ranks one whole-buffer exchange).
  // "auto": direct at 2 ranks below kAutoDirectBelowBytes, else bcube below
  // kAutoBcubeBelowBytes, else the ring. Measured in bench/allreduce over TCP (gloo-tcp column):
  //  - 2026-12-06, 3 and 4 ranks on one host: bcube 1.1-1.9x the ring's bandwidth from 16 KiB to
  //    1 MiB, the ring 1.0-1.4x bcube's from 4 MiB up; 2 x 2 namespaces: bcube 1.0-1.4x the ring.
  //  - 2026-12-07, 2 ranks on one host, 3 runs alternating with bcube/ring, medians: direct 2.3x
  //    at 4 KiB, 2.6x at 16 KiB, 1.6x at 64 and 256 KiB (one exchange where bcube takes two; one
  //    run of three 0.5x at 256 KiB), 0.9x at 1 MiB, 0.44x at 64 MiB (no pipelining of the fold
  //    with the transfer, where Gloo's ring has 1 MiB segments). At 4 ranks the direct form's 2
  //    rounds (6 messages per rank) gave 0.72-1.04x bcube's 4 (4 messages) over 2 runs, so it is
  //    not taken there.
  enum class Algorithm { automatic, ring, bcube, direct };  // config.cpp spells them in order
  Algorithm algorithm = Algorithm::automatic;
  static constexpr uint64_t kAutoDirectBelowBytes = uint64_t{1} << 20;
  static constexpr uint64_t kAutoBcubeBelowBytes = uint64_t{2} << 20;
  Algorithm algorithm_for(int ranks, uint64_t payload_bytes) const {
    if (algorithm != Algorithm::automatic) return algorithm;
    if (ranks == 2 && payload_bytes < kAutoDirectBelowBytes) return Algorithm::direct;
    return payload_bytes < kAutoBcubeBelowBytes ? Algorithm::bcube : Algorithm::ring;
  }
  const char* algorithm_name() const {
    return algorithm == Algorithm::bcube    ? "bcube"
           : algorithm == Algorithm::ring   ? "ring"
           : algorithm == Algorithm::direct ? "direct"
                                            : "auto: direct at 2 ranks below 1 MiB, bcube below "
                                              "2 MiB, else ring";
  }
  // How the ranks exchange the agreement frame before each collective over TCP (agreement.hpp):
  // "direct", every rank sends its frame to every other (one round of latency, size - 1 frames
  // out per rank); "ring", Gloo's ring allgather (size - 1 rounds in a row, one frame out per
  // round); "auto", direct up to kAutoDirectMaxRanks ranks and the ring above, where the frames
  // one rank sends (1 KiB each) would grow with the job. Measured in bench/allreduce, gloo-tcp
  // column, 4 ranks on one host (2026-12-07): direct 1.4-1.75x the ring's bandwidth from 1 to
  // 16 KiB, 1.07x at 64 KiB; 2 x 2 namespaces, 64 KiB: 0.145-0.162 GB/s against 0.101-0.122.
  enum class Agreement { automatic, direct, ring };  // config.cpp spells them in order
  Agreement agreement = Agreement::automatic;
  static constexpr int kAutoDirectMaxRanks = 16;
  bool direct_agreement_for(int ranks) const {
    return agreement == Agreement::direct ||
           (agreement == Agreement::automatic && ranks <= kAutoDirectMaxRanks);
  }
  // What the create line says for `ranks`: the form in effect.
  const char* agreement_name(int ranks) const {
    return direct_agreement_for(ranks) ? "agreement direct" : "agreement ring";
  }
  // Over several hosts, the collectives in two levels (within hosts, across, within hosts):
  // "on" (true), "off" (false), or "auto" (the default): on where the two-level form runs, every
  // host holding the same number of ranks, more than one, with shared memory allowed; off
  // elsewhere, where only the form through each host's first rank would remain (measured slower
  // than the flat ring, issue 32). Collectives::hierarchical() is the answer in effect. Measured on
  // 2 x 2 namespace hosts (bench/allreduce run_multinode.sh, 3 runs, 2026-12-08, the send buffer
  // read in place and no scratch per call: shm_two_level.hpp): the two-level allreduce 1.25-2.2x
  // the flat one from 1 to 64 KiB, 1.44-1.58x at 256 KiB, 0.99-1.25x at 1 MiB, 1.21-1.84x from
  // 4 MiB up.
  enum class Hierarchy { off, on, automatic };  // config.cpp spells them in order
  Hierarchy hierarchical = Hierarchy::automatic;
  // The two-level collectives work through a message in pieces of this many bytes (of the type
  // they reduce in), as allreduce-mpi's chunk_bytes: each piece's three steps run while it is in
  // cache (plugins/common/shm/shm_two_level.hpp has the measurement). reduce_scatter and
  // allgather take chunk_bytes / size of each rank's block per round.
  static constexpr uint64_t kDefaultChunkBytes = uint64_t{1} << 20;
  uint64_t chunk_bytes = kDefaultChunkBytes;
  bool file_store = false;    // store "file": Gloo's FileStore in store_path (a shared directory)
  std::string store_path;
  // When every rank runs on one host, collectives of at least shm.min_bytes (the caller's payload)
  // go through shared memory (plugins/common/shm) instead of Gloo's TCP pairs: the same keys,
  // defaults and behaviour as allreduce-mpi's. shm.enabled false: Gloo only.
  common::shm::Settings shm;
};

// The keys that decide what goes on the wire, as "algorithm auto, agreement auto, ...": the same
// on every rank or create() fails (config::require_same_on_every_rank). timeout_ms and the store
// may differ (a store that differs fails the rendezvous itself).
std::string wire_summary(const Config& config);

// Parses and validates `config_json` (NULL or "" mean {}). Throws sdk::Error with
// STRATA_ERR_INVALID_ARGUMENT naming the offending key.
Config parse_config(const char* config_json);

}  // namespace strata::allreduce_gloo
