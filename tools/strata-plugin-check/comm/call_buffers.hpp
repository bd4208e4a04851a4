// Where the comm checks put the buffers they hand the plugin, and the buffers of one call. The
// checks build their inputs and expected results as host Bytes whatever the memory; in device
// memory each Bytes a call uses gets a device copy, and the results are copied back into the
// Bytes before they are compared, so host and device buffers are checked by the same code against
// the same reference.
#pragma once

#include "comm_reference.hpp"

#include <strata/plugin_api.h>

#include <memory>
#include <vector>

namespace strata::plugin_check::cuda {
class DeviceBytes;
}

namespace strata::plugin_check::comm {

// Host memory, or the memory of one CUDA device with the stream the host table hands the plugin
// (cuda_stream()): copies to and from the device are ordered on it.
struct Memory {
  strata_device device{STRATA_DEVICE_HOST, 0};
  void* stream = nullptr;  // a cudaStream_t, for device memory
  bool on_device() const { return device.type != STRATA_DEVICE_HOST; }
};

// The buffers of one collective call in `memory`. In host memory a view is the Bytes themselves.
// In device memory a Bytes gets its device copy at its first view (its contents copied in then),
// later views of it (in place, a block of it) point into the same copy, and copy_back() brings
// every copy's contents back into its Bytes. The Bytes must outlive this object and keep their
// size.
class CallBuffers {
 public:
  explicit CallBuffers(const Memory& memory);
  ~CallBuffers();
  CallBuffers(const CallBuffers&) = delete;
  CallBuffers& operator=(const CallBuffers&) = delete;
  CallBuffers(CallBuffers&&) noexcept;
  CallBuffers& operator=(CallBuffers&&) noexcept;

  // `count` elements of `dtype` from element `first` of `bytes`; view(): all of them.
  strata_buffer view_at(Bytes& bytes, int32_t dtype, uint64_t first, uint64_t count);
  strata_buffer view(Bytes& bytes, int32_t dtype);
  // After the collective completed: the device copies' contents into their Bytes (host: nothing).
  // Throws std::runtime_error when a copy fails.
  void copy_back();

 private:
  struct Mirror;
  void* device_copy(Bytes& bytes);

  Memory memory_;
  std::vector<Mirror> mirrors_;
};

}  // namespace strata::plugin_check::comm
