#include "plugin_device.hpp"

#include <exception>

namespace strata::plugin_check::comm {

PluginDevice::PluginDevice(const Session& s) {
  if (!s.claims_memory(STRATA_DEVICE_CUDA)) {
    why_not_ = "the caps claim host memory only (device_mask " +
               std::to_string(s.caps.device_mask) + ")";
    return;
  }
  why_not_ = cuda::missing_device();
  if (!why_not_.empty()) return;
  const int ordinal = cuda::current_device();
  try {
    stream_ = std::make_unique<cuda::Stream>();
  } catch (const std::exception& e) {
    why_not_ = "cannot make a stream on cuda:" + std::to_string(ordinal) + ": " + e.what();
    return;
  }
  memory_.device = strata_device{STRATA_DEVICE_CUDA, ordinal};
  memory_.stream = stream_->handle();
}

PluginDevice::~PluginDevice() = default;

}  // namespace strata::plugin_check::comm
