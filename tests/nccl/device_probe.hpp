// How many CUDA devices this process sees (0 when the driver or devices are missing), for the
// tests that need one to skip with a message where there is none.
#pragma once

#include <cuda_runtime_api.h>

namespace strata::test {

inline int cuda_devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace strata::test
