#include "config.hpp"

#include <strata_common/config_reader.hpp>

#include <cstdint>
#include <optional>

namespace strata::allreduce_mpi {
namespace {

// 1 MiB pieces. Measured with bench/allreduce (f32 SUM, Open MPI 4.1.4, 2-core VM, ranks run
// SCHED_RR so that concurrent builds did not distort the figures), bus bandwidth in GB/s, raw
// MPI_Allreduce of the whole message -> plugin with this chunk size:
//   2 ranks:  4 MiB 1.11 -> 1.40   16 MiB 1.01 -> 1.29   64 MiB 0.61 -> 1.35
//   4 ranks:  4 MiB 0.59 -> 0.76   16 MiB 0.64 -> 0.73   64 MiB 0.40 -> 0.64
// Larger pieces gained less (4 MiB: 64 MiB at 1.09 / 0.59; 2 MiB: 1.15 / 0.44); smaller ones
// gained at 64 MiB but lost up to 12% on messages of a few pieces (256 KiB pieces: 1 MiB at 4 ranks
// 1.90 -> 1.67). Messages up to one piece go to MPI unchanged. Large messages are probably slow
// whole because their working set (send, receive and temporary buffers of every rank) then no
// longer fits the 32 MiB L3 cache and every copy through shared memory goes to DRAM (~5 GB/s
// memcpy here).
constexpr uint64_t kDefaultChunkBytes = uint64_t{1} << 20;

// Blocking collectives below 1 MiB skip the arrival gate (MPI_I* calls waited politely instead).
// Measured with bench/allreduce/run_multinode.sh (2 hosts x 2 ranks, plugin-mpi / raw MPI bus
// bandwidth, one run each way): 1 KiB 0.63 gated -> 0.70-1.16 (three runs) ungated, 64 KiB 0.63 ->
// 0.88, 256 KiB 0.87 -> 0.95, 512 KiB 0.91 -> 0.96; but 1 MiB 0.96 -> 0.19 (Open MPI's
// non-blocking allreduce of a large message is slow here), so from 1 MiB the gate stays.
constexpr uint64_t kDefaultArrivalGateMinBytes = uint64_t{1} << 20;

// "true", "false" or "auto", as the config spells it.
const char* hierarchy_name(Config::Hierarchy h) {
  return h == Config::Hierarchy::on ? "true" : h == Config::Hierarchy::off ? "false" : "auto";
}

}  // namespace

std::string wire_summary(const Config& config) {
  return "chunk_bytes " + std::to_string(config.chunk_bytes) + ", arrival_gate " +
         (config.arrival_gate ? "true" : "false") + ", arrival_gate_min_bytes " +
         std::to_string(config.arrival_gate_min_bytes) + ", hierarchical " +
         hierarchy_name(config.hierarchical) + ", " + common::shm::summary(config.shm);
}

Config parse_config(const char* config_json) {
  // The plugins' one reader (plugins/common/config): errors name "comm config: <key>".
  const common::config::json root = common::config::parse_object(config_json, "comm config");
  // A null value is refused, as a value of the wrong type.
  common::config::ObjectReader c(root, "comm config", ": ", common::config::Nulls::refused);
  Config config;
  config.chunk_bytes =
      c.unsigned_integer("chunk_bytes", kDefaultChunkBytes, 1, UINT64_MAX, "a positive integer");
  config.arrival_gate = c.boolean("arrival_gate", true);
  config.arrival_gate_min_bytes =
      c.unsigned_integer("arrival_gate_min_bytes", kDefaultArrivalGateMinBytes, 0, UINT64_MAX,
                         "a non-negative integer");
  config.shm = common::shm::read_settings(c);
  if (const std::optional<bool> h = c.boolean_or_auto("hierarchical")) {
    config.hierarchical = *h ? Config::Hierarchy::on : Config::Hierarchy::off;
  }
  c.reject_unknown();
  return config;
}

}  // namespace strata::allreduce_mpi
