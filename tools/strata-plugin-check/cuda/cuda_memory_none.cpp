// cuda_memory.hpp for a checker built without CUDA: there is never a device, so the device checks
// are skipped with missing_device()'s sentence and the rest is never called (it throws if it is).
#include "cuda_memory.hpp"

#include <stdexcept>

namespace strata::plugin_check::cuda {
namespace {

constexpr char kWithoutCuda[] =
    "this strata-plugin-check was built without CUDA (STRATA_CUDA=OFF, or no CUDA toolkit at "
    "build time), so it cannot use a device";

[[noreturn]] void no_device() { throw std::logic_error(kWithoutCuda); }

}  // namespace

std::string missing_device() { return kWithoutCuda; }
int current_device() { return 0; }

Stream::Stream() { no_device(); }
Stream::~Stream() = default;

DeviceBytes::DeviceBytes(size_t) { no_device(); }
DeviceBytes::~DeviceBytes() = default;

void copy_to_device(void*, const void*, size_t, void*) { no_device(); }
void copy_to_host(void*, const void*, size_t, void*) { no_device(); }

}  // namespace strata::plugin_check::cuda
