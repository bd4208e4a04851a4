// Where the job's buffers live and how bytes move between them. With host parameters every
// operation is the plain loop or memcpy it always was (inline, so the CPU path is unchanged);
// with parameters in CUDA device memory (ABI 1.7: the host's device()) buffers are allocated on
// that device and every operation is enqueued on the host's stream (device_ops.hpp), so the work
// is ordered after the host's backward and before its next forward, and the comm plugin orders
// its collectives with that stream itself.
#pragma once

#include "device_ops.hpp"

#include <strata/plugin.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

namespace strata::zero {

class Memory {
 public:
  Memory() = default;  // host memory
  // The job's device as the host reports it now (HOST before finalize and on runtimes < 1.7).
  explicit Memory(const sdk::Host& host);

  bool on_device() const { return device_.type == STRATA_DEVICE_CUDA; }
  strata_device device() const { return device_; }

  // Accounted memory at the job's location, zeroed unless `zeroed` is false (for buffers a
  // collective or a read overwrites whole: zeroing them first is a second pass over memory that
  // is often not even mapped yet); throws STRATA_ERR_OUT_OF_MEMORY naming the bytes and the
  // location.
  void* alloc(size_t bytes, strata_mem_category category, bool zeroed = true) const;
  void free(void* p) const;

  void copy(void* dst, const void* src, size_t bytes) const {
    if (!on_device()) {
      std::memcpy(dst, src, bytes);
      return;
    }
    device_ops::copy(dst, src, bytes, stream(), "zero: buffer copy");
  }
  void zero(void* dst, size_t bytes) const {
    if (!on_device()) {
      std::memset(dst, 0, bytes);
      return;
    }
    device_ops::fill_bytes(dst, 0, bytes, stream(), "zero: buffer zeroing");
  }
  // Every byte set to 0xff: NaN in f32, f16 and bf16 (debug poisoning of stale buffers).
  void poison(void* dst, size_t bytes) const;
  // dst[i] += src[i] in fp32.
  void add(float* dst, const float* src, uint64_t count) const {
    if (!on_device()) {
      for (uint64_t i = 0; i < count; ++i) dst[i] += src[i];
      return;
    }
    device_ops::add(dst, src, count, stream(), "zero: gradient accumulation");
  }
  // Blocking copies between host memory and the job's memory (control data, tests).
  void to_host(void* host_dst, const void* src, size_t bytes) const;
  void from_host(void* dst, const void* host_src, size_t bytes) const;

  // A buffer descriptor of this location, for the comm and precision strata.
  strata_buffer buffer(void* data, uint64_t count, int32_t dtype) const {
    strata_buffer b = sdk::host_buffer(data, count, dtype);
    b.device = device_;
    return b;
  }

 private:
  void* stream() const;  // the host's stream, read per call (valid for the current call)

  sdk::Host host_;
  strata_device device_{STRATA_DEVICE_HOST, 0};
};

// Buffer's constructor argument for an array whose every element is written before it is read.
struct Uninitialized {};

// An accounted, zeroed array at the job's location (sdk::HostArray's twin for buffers that follow
// the parameters onto a device). No element access: the data may not be readable from the CPU.
template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(const sdk::Host& host, size_t count, strata_mem_category category)
      : memory_(host), count_(count) {
    data_ = static_cast<T*>(memory_.alloc(count * sizeof(T), category));
  }
  // Not zeroed: the caller overwrites every element before anything reads it.
  Buffer(const sdk::Host& host, size_t count, strata_mem_category category, Uninitialized)
      : memory_(host), count_(count) {
    data_ = static_cast<T*>(memory_.alloc(count * sizeof(T), category, /*zeroed=*/false));
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    Buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~Buffer() {
    if (data_ != nullptr) memory_.free(data_);
  }
  T* data() const { return data_; }
  size_t size() const { return count_; }

 private:
  void swap(Buffer& o) noexcept {
    std::swap(memory_, o.memory_);
    std::swap(data_, o.data_);
    std::swap(count_, o.count_);
  }
  Memory memory_;
  T* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace strata::zero
