// strata_common/shm_setup.hpp — setting the shared-memory group up at a comm plugin's create(),
// over the plugin's own transport, and the config keys that choose it. Every comm plugin that
// offers the path (allreduce-mpi over MPI, allreduce-gloo over Gloo) calls set_up() with a
// SetupChannel of its own, so the path behaves the same whatever carries the job's other traffic:
// the same keys and defaults, the same segment, agreement and failure detection.
//
// Collective over the channel: every rank calls it, and every rank comes out with a group or
// every rank without one (a rank that cannot map the segment turns the path off for all, so no
// rank takes a path its peers do not).
#pragma once

#include "shm_group.hpp"

#include <strata/plugin.hpp>
#include <strata_common/config_reader.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace strata::common::shm {

// comm.config's keys for the path: `shm` (on by default), `shm_min_bytes` (payloads from this size
// use shared memory; default 0, every size) and `shm_chunk_bytes` (bytes each rank stages per
// round; default 1 MiB). The defaults and the measurements behind them are in shm_setup.cpp.
struct Settings {
  bool enabled = true;
  uint64_t min_bytes = 0;
  uint64_t chunk_bytes = uint64_t{1} << 20;

  // Whether a collective moving `payload_bytes` takes the path (when there is a group). Depends
  // only on the call's arguments, which the ranks agree on, so all ranks take the same path.
  bool takes(uint64_t payload_bytes) const { return payload_bytes >= min_bytes; }
};

// Reads the three keys from a plugin's comm.config reader (errors name "comm config: <key>").
Settings read_settings(config::ObjectReader& reader);

// The three keys as "shm true, shm_min_bytes 0, shm_chunk_bytes 1048576": part of a plugin's
// summary for config::require_same_on_every_rank (which path a collective takes depends on them).
std::string summary(const Settings& settings);

// The plugin's own transport among every rank of the job, used only during set_up().
class SetupChannel {
 public:
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's `bytes` bytes at `mine` into `all` (size() * bytes, in rank order). Collective.
  // Throws sdk::Error (STRATA_ERR_COMM) when the transport fails.
  virtual void allgather(const void* mine, void* all, size_t bytes) const = 0;

 protected:
  ~SetupChannel() = default;
};

// Bytes recorded in the host's memory report (STRATA_MEM_COMM_BUFFERS) while alive: each rank
// records its share of the segment (its size / ranks), so the job's report sums to the segment.
class AccountedBytes {
 public:
  AccountedBytes() = default;
  AccountedBytes(const sdk::Host& host, int64_t bytes) : host_(host), bytes_(bytes) {
    host_.account(STRATA_MEM_COMM_BUFFERS, STRATA_MEM_HOST, bytes_);
  }
  AccountedBytes(AccountedBytes&& other) noexcept
      : host_(other.host_), bytes_(std::exchange(other.bytes_, 0)) {}
  AccountedBytes& operator=(AccountedBytes&& other) noexcept {
    if (this != &other) {
      release();
      host_ = other.host_;
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  ~AccountedBytes() { release(); }

 private:
  void release() {
    if (bytes_ != 0) host_.account(STRATA_MEM_COMM_BUFFERS, STRATA_MEM_HOST, -bytes_);
    bytes_ = 0;
  }

  sdk::Host host_;
  int64_t bytes_ = 0;
};

struct Setup {
  std::unique_ptr<ShmGroup> group;  // nullptr: the collectives use the plugin's transport only
  std::string summary;              // for the create() log line: "shm on (...)" or "shm off (why)"
  AccountedBytes accounted;         // this rank's share of the segment
};

// `one_host`: every rank of the channel runs on this host (the plugin's own reckoning). `plugin`
// names the plugin in warnings ("allreduce-mpi"). Throws sdk::Error (STRATA_ERR_COMM) only when the
// channel fails; a segment that cannot be made or mapped turns the path off (a warning on the rank
// that saw why), and an unusable STRATA_CPU_ISA fails create (STRATA_ERR_INVALID_ARGUMENT).
Setup set_up(const SetupChannel& channel, const Settings& settings, bool one_host,
             const sdk::Host& host, const char* plugin);

// For groups set up per host (the two-level allreduce): every rank of the job must take the same
// path, so unless every rank of `job` (a channel over all the job's ranks) came out with a group,
// every rank drops its own and says why. Collective over `job`.
void keep_only_if_everyone_has_one(Setup& setup, const SetupChannel& job);

}  // namespace strata::common::shm
