// The state of one collective between its start and its completion.
//
// Every collective builds one: validation and input conversion happen at once, the Gloo calls are
// recorded in `work` for the caller to run (blocking) or to queue on the progress thread.
// Non-blocking calls hand it out as the opaque strata_request until wait(). It owns everything Gloo
// may still read or write (scratch buffers, packed blocks) and the post-processing that must run
// afterwards (f32 -> half conversion, AVG division, unpacking).
#pragma once

#include <strata/comm/scratch.hpp>
#include <strata/plugin.hpp>

#include <cstdint>
#include <functional>
#include <future>
#include <vector>

namespace strata::allreduce_gloo {

// Accounted (STRATA_MEM_COMM_BUFFERS) and uninitialised scratch memory (the SDK's).
using sdk::comm::Scratch;

struct Request {
  static constexpr uint32_t kMagic = 0x53474c4f;  // "SGLO": a live request of this plugin

  uint32_t magic = kMagic;
  const void* owner = nullptr;   // the plugin instance that started it
  std::function<void()> work;    // the Gloo calls, in order
  bool via_shm = false;          // work runs on the shared-memory group: no socket is written
  std::future<void> queued;      // valid while the work was handed to the progress thread
  Scratch scratch;               // f32 accumulation buffer for halves, or packed allgatherv or
                                 // alltoallv blocks
  std::vector<size_t> counts;    // allgatherv: elements per rank, read by Gloo until completion
  std::vector<uint64_t> counts64, displs64;  // allgather(v) through shared memory: the same;
                                             // alltoallv: send's, then recv's (2 * size each)
  std::function<void()> finish;  // runs once the work is done; may be empty

  ~Request() { magic = 0; }
  // Waits for the progress thread (rethrowing its error) and runs `finish`.
  void complete();
  bool done() const {
    return !queued.valid() || queued.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }
};

}  // namespace strata::allreduce_gloo
