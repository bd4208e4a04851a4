#include "call_buffers.hpp"

#include "cuda/cuda_memory.hpp"

#include <strata/plugin.hpp>

namespace strata::plugin_check::comm {

struct CallBuffers::Mirror {
  Bytes* host;
  std::unique_ptr<cuda::DeviceBytes> device;
};

CallBuffers::CallBuffers(const Memory& memory) : memory_(memory) {}
CallBuffers::~CallBuffers() = default;
CallBuffers::CallBuffers(CallBuffers&&) noexcept = default;
CallBuffers& CallBuffers::operator=(CallBuffers&&) noexcept = default;

void* CallBuffers::device_copy(Bytes& bytes) {
  for (const Mirror& m : mirrors_) {
    if (m.host == &bytes) return m.device->data();
  }
  auto device = std::make_unique<cuda::DeviceBytes>(bytes.size());
  cuda::copy_to_device(device->data(), bytes.data(), bytes.size(), memory_.stream);
  mirrors_.push_back({&bytes, std::move(device)});
  return mirrors_.back().device->data();
}

strata_buffer CallBuffers::view_at(Bytes& bytes, int32_t dtype, uint64_t first, uint64_t count) {
  strata_buffer buffer = sdk::host_buffer(nullptr, count, dtype);
  buffer.device = memory_.device;
  // An empty buffer has no memory anywhere: NULL, still labelled with the memory it stands for.
  if (bytes.empty()) return buffer;
  unsigned char* base = memory_.on_device() ? static_cast<unsigned char*>(device_copy(bytes))
                                            : bytes.data();
  buffer.data = base + first * sdk::dtype_size(dtype);
  return buffer;
}

strata_buffer CallBuffers::view(Bytes& bytes, int32_t dtype) {
  return view_at(bytes, dtype, 0, bytes.size() / sdk::dtype_size(dtype));
}

void CallBuffers::copy_back() {
  for (const Mirror& m : mirrors_) {
    cuda::copy_to_host(m.host->data(), m.device->data(), m.host->size(), memory_.stream);
  }
}

}  // namespace strata::plugin_check::comm
