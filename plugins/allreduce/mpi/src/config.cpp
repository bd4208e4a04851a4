#include "config.hpp"

#include <strata/plugin.hpp>

#include <nlohmann/json.hpp>

#include <string>

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

// Shared memory from the first byte, in rounds of 1 MiB per rank. Measured with bench/allreduce
// (f32 SUM, 2 and 4 ranks, 16 KiB - 4 MiB rounds): 1 MiB rounds were best or tied at every size
// (fewer rounds, fewer waits; 4 MiB rounds fall out of cache and lost everywhere), and below
// 64 KiB the shared-memory path beat the plugin's MPI path at 30 of 32 points, so no size goes to
// MPI by default. Figures: README, "Collectives on one host".
constexpr uint64_t kDefaultShmMinBytes = 0;
constexpr uint64_t kDefaultShmChunkBytes = uint64_t{1} << 20;

[[noreturn]] void invalid(const std::string& message) {
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "comm config: " + message);
}

uint64_t positive_integer(const nlohmann::json& value, const char* key) {
  if (value.is_number_unsigned() && value.get<uint64_t>() > 0) return value.get<uint64_t>();
  invalid(std::string(key) + ": expected a positive integer, got " + value.dump());
}

uint64_t unsigned_integer(const nlohmann::json& value, const char* key) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  invalid(std::string(key) + ": expected a non-negative integer, got " + value.dump());
}

bool boolean(const nlohmann::json& value, const char* key) {
  if (value.is_boolean()) return value.get<bool>();
  invalid(std::string(key) + ": expected true or false, got " + value.dump());
}

}  // namespace

Config parse_config(const char* config_json) {
  Config config{kDefaultChunkBytes, true, true, kDefaultShmMinBytes, kDefaultShmChunkBytes,
                false};
  if (config_json == nullptr || *config_json == '\0') return config;
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(config_json);
  } catch (const nlohmann::json::parse_error& e) {
    invalid(std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) invalid("expected a JSON object, got " + root.dump());
  for (const auto& [key, value] : root.items()) {
    if (key == "chunk_bytes") {
      config.chunk_bytes = positive_integer(value, "chunk_bytes");
    } else if (key == "arrival_gate") {
      config.arrival_gate = boolean(value, "arrival_gate");
    } else if (key == "shm") {
      config.shm = boolean(value, "shm");
    } else if (key == "shm_min_bytes") {
      config.shm_min_bytes = unsigned_integer(value, "shm_min_bytes");
    } else if (key == "shm_chunk_bytes") {
      config.shm_chunk_bytes = positive_integer(value, "shm_chunk_bytes");
    } else if (key == "hierarchical") {
      config.hierarchical = boolean(value, "hierarchical");
    } else {
      invalid("unknown key '" + key + "' (known keys: chunk_bytes, arrival_gate, shm, " +
              "shm_min_bytes, shm_chunk_bytes, hierarchical)");
    }
  }
  return config;
}

}  // namespace strata::allreduce_mpi
