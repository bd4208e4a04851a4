// The CUDA device the comm checks put a plugin's device buffers on: the one the plugin selected
// at create (the current device of the thread that created it, as the runtime's host staging
// takes it), with a stream of the checker's own that the instance's host table hands out as the
// host's stream (cuda_stream()), as the runtime hands out the stream of strata_set_stream.
#pragma once

#include "comm_session.hpp"
#include "cuda/cuda_memory.hpp"

#include <memory>
#include <string>

namespace strata::plugin_check::comm {

class PluginDevice {
 public:
  // After the plugin's create and query, on the thread that created it. Unusable (why_not()
  // says why) when the caps claim no CUDA memory, this machine has no CUDA device (or the checker
  // was built without CUDA), or no stream can be made on the device.
  explicit PluginDevice(const Session& s);
  ~PluginDevice();
  PluginDevice(const PluginDevice&) = delete;
  PluginDevice& operator=(const PluginDevice&) = delete;

  bool usable() const { return stream_ != nullptr; }
  // "no CUDA device on this machine (cudaGetDeviceCount: ...)"; empty when usable.
  const std::string& why_not() const { return why_not_; }
  // The device's memory and the checker's stream on it (usable() only).
  const Memory& memory() const { return memory_; }

 private:
  std::unique_ptr<cuda::Stream> stream_;
  Memory memory_;
  std::string why_not_;
};

}  // namespace strata::plugin_check::comm
