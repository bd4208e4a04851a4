// The state of one collective between its start and its completion.
//
// Every collective builds one. Blocking calls complete it at once; non-blocking calls hand it out
// as the opaque strata_request until wait(). It owns everything MPI may
// still read or write (scratch buffers, count arrays) and the post-processing that must run after
// MPI is done (f32 -> half conversion, AVG division).
#pragma once

#include "mpi_comm.hpp"

#include <strata/plugin.hpp>

#include <cstdint>
#include <functional>
#include <vector>

namespace strata::allreduce_mpi {

// Accounted (STRATA_MEM_COMM_BUFFERS) and uninitialised f32 scratch memory.
class Scratch {
 public:
  Scratch() = default;
  Scratch(const sdk::Host& host, size_t count);
  Scratch(Scratch&& other) noexcept;
  Scratch& operator=(Scratch&& other) noexcept;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch();
  float* data() const { return data_; }

 private:
  sdk::Host host_;
  float* data_ = nullptr;
};

struct Request {
  static constexpr uint32_t kMagic = 0x53414d50;  // "SAMP": a live request of this plugin

  uint32_t magic = kMagic;
  const void* owner = nullptr;      // the plugin instance that started it
  bool nonblocking = false;         // MPI_I* variants in flight until complete()
  std::vector<MPI_Request> mpi;     // in flight; empty once a blocking call returned
  Scratch scratch;                  // f32 accumulation buffer for half dtypes
  std::vector<int> counts, displs;  // allgatherv arrays, read by MPI until completion
  std::function<void()> finish;     // runs once MPI is done; may be empty

  ~Request() { magic = 0; }
  // Waits for MPI and runs `finish`.
  void complete(const MpiComm& comm);
};

}  // namespace strata::allreduce_mpi
