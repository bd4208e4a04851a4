// device_ops for a build without CUDA: device buffers are refused with a message.
#include "device_ops.hpp"

namespace strata::amp {
namespace {

[[noreturn]] void unavailable(const char* what) {
  sdk::fail(STRATA_ERR_UNSUPPORTED,
            std::string(what) + ": the buffers are in CUDA device memory, but strata_amp was "
                                "built without CUDA (configure with -DSTRATA_CUDA=ON)");
}

}  // namespace

DeviceScratch::~DeviceScratch() = default;
void* DeviceScratch::at_least(std::size_t) { unavailable("amp grad_stats"); }
void device_cast(const strata_buffer&, const strata_buffer&, void*) { unavailable("amp cast"); }
GradStats device_grad_stats(std::span<const strata_shard>, DeviceScratch&, void*) {
  unavailable("amp grad_stats");
}

}  // namespace strata::amp
