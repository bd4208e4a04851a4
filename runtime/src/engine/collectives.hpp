// Blocking collectives on host buffers (and a parameter's broadcast on its device) through the comm stratum, for the runtime's own needs
// (agreement on errors, parameter checks, statistics) and the host API's metric collectives.
#pragma once

#include "error.hpp"
#include "device/host_staging.hpp"

#include <strata/plugin.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace strata::rt {

// A view of `count` elements of `dtype` in host memory, for plugin calls. `data` is only read
// when the callee treats the buffer as input.
strata_buffer host_buffer(const void* data, uint64_t count, int32_t dtype);

class Collectives {
 public:
  // `ops`/`self`: the comm stratum (the tracked proxy); `label` names its plugin in errors.
  Collectives(const strata_comm_ops& ops, void* self, std::string label, int world_size)
      : comm_(&ops, self), label_(std::move(label)), world_size_(world_size) {}

  void allreduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op) const;
  void allgather(const void* send, void* recv, uint64_t count_per_rank, int32_t dtype) const;
  void broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root) const;
  // `buf` in `device`'s memory (a parameter's: finalize checked the comm stratum moves it).
  void broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root,
                 const strata_device& device) const;
  void barrier() const;
  int world_size() const { return world_size_; }

  // For a comm stratum that moves CUDA device memory only (no STRATA_DEVICE_HOST in its caps):
  // host buffers go through a device buffer (HostStaging) in order with `stream` (the host's), or,
  // in a world of one, where every collective is the identity, are copied on the host without the
  // comm stratum. Before the first collective.
  void stage_host_buffers(std::function<void*()> stream, int rank);

  // Every rank passes its own text; every rank gets all texts, indexed by rank. Uses allgather
  // only (allgatherv is optional in the ABI), padding each text to the longest.
  std::vector<std::string> allgather_strings(const std::string& mine) const;

 private:
  // Runs one blocking sdk::Comm call; its failure becomes an Error naming the plugin.
  template <class Call>
  void run(Call&& call) const;

  // allreduce, allgather, broadcast of host buffers through staging_ (or on the host alone).
  void staged_allreduce(const void* send, void* recv, uint64_t count, int32_t dtype,
                        int32_t op) const;
  void staged_allgather(const void* send, void* recv, uint64_t count_per_rank,
                        int32_t dtype) const;
  void staged_broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root) const;

  sdk::Comm comm_;
  std::string label_;
  int world_size_;
  // Set when the comm stratum cannot move host memory; mutable: its scratch buffer grows.
  std::unique_ptr<HostStaging> staging_;
  bool staged_ = false;
  int rank_ = 0;  // where this rank's part goes in a staged allgather
};

}  // namespace strata::rt
