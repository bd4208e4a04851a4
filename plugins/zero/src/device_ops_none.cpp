// device_ops for a build without CUDA: a job whose parameters are in device memory cannot run.
#include "device_ops.hpp"

#include <strata/plugin.hpp>

#include <string>

namespace strata::zero::device_ops {
namespace {

[[noreturn]] void unavailable(const char* what) {
  sdk::fail(STRATA_ERR_UNSUPPORTED,
            std::string(what) + ": the parameters are in CUDA device memory, but strata_zero was "
                                "built without CUDA (configure with -DSTRATA_CUDA=ON)");
}

}  // namespace

void copy(void*, const void*, size_t, void*, const char* what) { unavailable(what); }
void fill_bytes(void*, unsigned char, size_t, void*, const char* what) { unavailable(what); }
void add(float*, const float*, uint64_t, void*, const char* what) { unavailable(what); }
void synchronize(void*, const char* what) { unavailable(what); }

}  // namespace strata::zero::device_ops
