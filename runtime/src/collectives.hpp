// Blocking collectives on host buffers through the comm stratum, for the runtime's own needs
// (agreement on errors, parameter checks, statistics) and the host API's metric collectives.
#pragma once

#include "plugin_instance.hpp"

#include <strata/plugin_api.h>

#include <cstdint>
#include <string>
#include <vector>

namespace strata::rt {

// A view of `count` elements of `dtype` in host memory, for plugin calls. `data` is only read
// when the callee treats the buffer as input.
strata_buffer host_buffer(const void* data, uint64_t count, int32_t dtype);

class Collectives {
 public:
  Collectives(const PluginInstance<strata_comm_ops>& comm, int world_size)
      : comm_(comm), world_size_(world_size) {}

  void allreduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op) const;
  void allgather(const void* send, void* recv, uint64_t count_per_rank, int32_t dtype) const;
  void allgatherv(const void* send, uint64_t send_count, void* recv,
                  const std::vector<uint64_t>& counts, int32_t dtype) const;
  void broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root) const;
  void barrier() const;

  // Every rank passes its own text; every rank gets all texts, indexed by rank.
  std::vector<std::string> allgather_strings(const std::string& mine) const;

 private:
  const PluginInstance<strata_comm_ops>& comm_;
  int world_size_;
};

}  // namespace strata::rt
