// Blocking collectives on host buffers (and a parameter's broadcast on its device) through the comm stratum, for the runtime's own needs
// (agreement on errors, parameter checks, statistics) and the host API's metric collectives.
#pragma once

#include "error.hpp"

#include <strata/plugin.hpp>

#include <cstdint>
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

  // Every rank passes its own text; every rank gets all texts, indexed by rank. Uses allgather
  // only (allgatherv is optional in the ABI), padding each text to the longest.
  std::vector<std::string> allgather_strings(const std::string& mine) const;

 private:
  // Runs one blocking sdk::Comm call; its failure becomes an Error naming the plugin.
  template <class Call>
  void run(Call&& call) const;

  sdk::Comm comm_;
  std::string label_;
  int world_size_;
};

}  // namespace strata::rt
