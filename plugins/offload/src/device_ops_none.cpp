// device_ops for a build without CUDA: shards in device memory are refused with a message.
#include <string>
#include <strata/plugin.hpp>

#include "device_ops.hpp"

namespace strata::offload::device {
namespace {

[[noreturn]] void unavailable(const char* what) {
  sdk::fail(STRATA_ERR_UNSUPPORTED,
            std::string(what) + ": the shards are in CUDA device memory, but strata_offload was "
                                "built without CUDA (configure with -DSTRATA_CUDA=ON)");
}

}  // namespace

void copy_async(void*, const void*, size_t, void*, const char* what) { unavailable(what); }
void copy(void*, const void*, size_t, void*, const char* what) { unavailable(what); }
void fill_zero(void*, size_t, void*, const char* what) { unavailable(what); }
void adam_step(const AdamScalars&, std::span<const AdamArrays>, void*) {
  unavailable("offload: fused Adam on the device");
}
void sgd_step(const SgdScalars&, std::span<const SgdArrays>, void*) {
  unavailable("offload: fused SGD on the device");
}
void lion_step(const LionScalars&, std::span<const LionArrays>, void*) {
  unavailable("offload: fused Lion on the device");
}

struct CopyPipe::Impl {};
CopyPipe::CopyPipe(size_t) : impl_(nullptr) { unavailable("offload: pinned copy pipeline"); }
CopyPipe::~CopyPipe() = default;
void CopyPipe::begin(void*) {}
void CopyPipe::down(void*, const void*, size_t) {}
void CopyPipe::down_done(size_t) {}
void CopyPipe::wait_down(size_t) {}
void CopyPipe::up(void*, const void*, size_t) {}
void CopyPipe::up_done(size_t) {}
void CopyPipe::wait_up(size_t) {}
void CopyPipe::end(void*) {}

}  // namespace strata::offload::device
