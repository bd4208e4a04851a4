// Whether this process sees a CUDA device, and the message GPU tests skip with when it does not.
// For tests built with the CUDA runtime (STRATA_HAVE_CUDA); plain C++, no nvcc needed.
//
//   TEST(Foo, Bar) {
//     STRATA_REQUIRE_GPU();  // GTEST_SKIP() << "no CUDA device: <why>" on a machine without one
//     ...
//   }
#pragma once

#include <cuda_runtime.h>

#include <string>

namespace strata::test::gpu {

// Empty when a device is usable, else why not: "no CUDA device: <cudaGetErrorString>" (or
// "... 0 devices visible" when the runtime works but lists none).
inline std::string missing_device() {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    cudaGetLastError();  // clear it: the next CUDA call should not report it again
    return std::string("no CUDA device: ") + cudaGetErrorString(rc);
  }
  if (count == 0) return "no CUDA device: 0 devices visible";
  return {};
}

inline bool device_available() { return missing_device().empty(); }

}  // namespace strata::test::gpu

// Skips the current gtest test, with the reason, when there is no device.
#define STRATA_REQUIRE_GPU()                                                   \
  do {                                                                         \
    if (const std::string why = ::strata::test::gpu::missing_device(); !why.empty()) { \
      GTEST_SKIP() << why;                                                     \
    }                                                                          \
  } while (0)
