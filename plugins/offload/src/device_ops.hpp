// The offload stratum's CUDA work (ABI 1.7, shards in device memory): the fused optimizer
// kernels of the SDK (strata_common_cuda_kernels) for offload_optimizer.device none, and the streams,
// events and copies of the pinned-memory pipeline for device cpu. Two builds of one interface:
// device_ops_cuda.cpp when STRATA_HAVE_CUDA, device_ops_none.cpp (every call fails with "built
// without CUDA") otherwise. No CUDA header here: callers are plain C++.
#pragma once

#include <cstddef>
#include <span>

#include "optimizer_kernels.hpp"

namespace strata::offload::device {

// Copies `bytes` between host and device memory in either direction (unified addressing),
// enqueued on `stream`; copy() also waits for it.
void copy_async(void* dst, const void* src, size_t bytes, void* stream, const char* what);
void copy(void* dst, const void* src, size_t bytes, void* stream, const char* what);
void fill_zero(void* dst, size_t bytes, void* stream, const char* what);

// The fused steps over device arrays (every pointer of the *Arrays a device pointer; `copy` the
// model-dtype copy-out, all of one HalfType or none), enqueued on `stream`. The arithmetic is the
// CPU kernels' (the shared CUDA kernels share it); the scalars are the CPU kernels' structs.
void adam_step(const AdamScalars& s, std::span<const AdamArrays> arrays, void* stream);
void sgd_step(const SgdScalars& s, std::span<const SgdArrays> arrays, void* stream);
void lion_step(const LionScalars& s, std::span<const LionArrays> arrays, void* stream);

// Two copy streams and per-buffer events for the pinned pipeline (piece_plan.hpp): downloads on
// one stream, uploads on the other, both ordered after the host's stream at begin() and the
// host's stream ordered after the uploads at end().
class CopyPipe {
 public:
  explicit CopyPipe(size_t buffers);
  ~CopyPipe();
  CopyPipe(const CopyPipe&) = delete;
  CopyPipe& operator=(const CopyPipe&) = delete;

  // The copies that follow see everything the host enqueued on `host_stream` so far.
  void begin(void* host_stream);
  void down(void* dst, const void* src, size_t bytes);  // device -> pinned host
  void down_done(size_t buffer);                        // marks buffer's downloads
  void wait_down(size_t buffer);                        // blocks the CPU until they finished
  void up(void* dst, const void* src, size_t bytes);    // pinned host -> device
  void up_done(size_t buffer);
  void wait_up(size_t buffer);
  // Blocks until every upload finished and orders `host_stream` after them.
  void end(void* host_stream);

 private:
  struct Impl;
  [[maybe_unused]] Impl* impl_;  // only the CUDA build's functions read it
};

}  // namespace strata::offload::device
