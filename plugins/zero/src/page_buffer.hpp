// An accounted fp32 array that is zero between uses and then holds no memory: in host memory it is
// a private anonymous mapping of this plugin's own (counted under its category through the host's
// account_bytes, like the buffers the host allocates), and clear() hands its pages back to the
// kernel instead of writing zeros. A page comes back, zeroed by the kernel, when it is first
// written again, so an array filled piece by piece (the gradient partition, slice by slice as
// backward reduces) grows with what it holds instead of holding its whole size from the step's
// start, where the host's activations peak. Reading a page nobody wrote maps the kernel's shared
// zero page and costs no memory.
//
// On a CUDA device, with a host older than ABI 1.2 (no account_bytes), or under AddressSanitizer
// (which catches overflows of heap blocks only), it is an ordinary zeroed Buffer and clear()
// writes zeros.
#pragma once

#include "device_memory.hpp"

#include <strata/plugin.hpp>

#include <cstddef>

namespace strata::zero {

class PageBuffer {
 public:
  PageBuffer() = default;
  // `count` zero elements; throws STRATA_ERR_OUT_OF_MEMORY naming the bytes.
  PageBuffer(const sdk::Host& host, size_t count, strata_mem_category category);
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  PageBuffer(PageBuffer&& o) noexcept { swap(o); }
  PageBuffer& operator=(PageBuffer&& o) noexcept {
    PageBuffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~PageBuffer();

  float* data() const { return data_; }
  size_t size() const { return count_; }
  // Every element back to zero; a mapping's pages leave the process.
  void clear();

 private:
  void swap(PageBuffer& o) noexcept;

  sdk::Host host_;
  Memory memory_;
  strata_mem_category category_ = STRATA_MEM_GRADS;
  float* data_ = nullptr;
  size_t count_ = 0;
  size_t mapped_bytes_ = 0;  // 0: data_ came from memory_.alloc
};

}  // namespace strata::zero
