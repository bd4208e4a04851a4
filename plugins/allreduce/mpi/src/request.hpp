// The state of one collective between its start and its completion.
//
// Every collective builds one: validation and input conversion happen at once, the MPI calls are
// recorded in `mpi_work` for the caller to run (blocking), start as MPI_I* variants, or queue on
// the progress thread. Non-blocking calls hand it out as the opaque strata_request until wait().
// It owns everything MPI may still read or write (scratch buffers, count arrays) and the
// post-processing that must run after MPI is done (f32 -> half conversion, AVG division).
#pragma once

#include "mpi_comm.hpp"

#include <strata/comm/scratch.hpp>
#include <strata/plugin.hpp>

#include <cstdint>
#include <functional>
#include <future>
#include <vector>

namespace strata::allreduce_mpi {

// Accounted (STRATA_MEM_COMM_BUFFERS) and uninitialised scratch memory (the SDK's).
using sdk::comm::Scratch;

struct Request {
  static constexpr uint32_t kMagic = 0x53414d50;  // "SAMP": a live request of this plugin

  uint32_t magic = kMagic;
  const void* owner = nullptr;      // the plugin instance that started it
  // The MPI calls of the collective: blocking with nullptr, else MPI_I* appending to the vector.
  std::function<void(MpiComm::Pending)> mpi_work;
  std::vector<MPI_Request> mpi;     // MPI_I* requests in flight
  std::future<void> queued;         // valid while the work was handed to the progress thread
  Scratch scratch;                  // f32 accumulation buffer for half dtypes
  std::vector<int> counts, displs;  // allgatherv's (alltoallv's receive) arrays, read by MPI
                                    // until completion
  std::vector<int> send_counts, send_displs;  // alltoallv's send arrays, likewise
  std::vector<uint64_t> counts64, displs64;  // the same for the shared-memory path
  std::function<void()> finish;     // runs once MPI is done; may be empty

  ~Request() { magic = 0; }
  // Waits for MPI (or the progress thread, rethrowing its error) and runs `finish`.
  void complete(const MpiComm& comm);
  // Whether the MPI work has completed, without blocking.
  bool mpi_done(const MpiComm& comm);
};

}  // namespace strata::allreduce_mpi
