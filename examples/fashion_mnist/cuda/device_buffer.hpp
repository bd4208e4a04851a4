// An owned cudaMalloc'd array of T on the current device; grows (contents dropped) with resize.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "cuda_check.hpp"

namespace strata::fmnist::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) { resize(count); }
  ~DeviceBuffer() { cudaFree(data_); }  // never throws; a failed free leaks at worst
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)),
        count_(std::exchange(other.count_, 0)),
        capacity_(std::exchange(other.capacity_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    std::swap(capacity_, other.capacity_);
    return *this;
  }

  // Ensures room for `count` elements; a larger buffer replaces the old one (not copied).
  void resize(std::size_t count) {
    if (count <= capacity_) {
      count_ = count;
      return;
    }
    void* fresh = nullptr;
    check(cudaMalloc(&fresh, count * sizeof(T)), "cudaMalloc");
    cudaFree(data_);
    data_ = static_cast<T*>(fresh);
    count_ = capacity_ = count;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  std::size_t size() const { return count_; }
  std::size_t bytes() const { return count_ * sizeof(T); }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace strata::fmnist::cuda
