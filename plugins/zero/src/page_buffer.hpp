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
#include <memory>

namespace strata::zero {

// PageBuffer's deleter: unmaps the mapping and gives its accounted bytes back to the host.
struct PageUnmap {
  sdk::Host host;
  strata_mem_category category = STRATA_MEM_GRADS;
  size_t bytes = 0;   // accounted
  size_t mapped = 0;  // whole pages
  void operator()(float* p) const;
};

class PageBuffer {
 public:
  PageBuffer() = default;
  // `count` zero elements; throws STRATA_ERR_OUT_OF_MEMORY naming the bytes.
  PageBuffer(const sdk::Host& host, size_t count, strata_mem_category category);

  float* data() const { return mapping_ ? mapping_.get() : heap_.data(); }
  size_t size() const { return count_; }
  // Every element back to zero; a mapping's pages leave the process.
  void clear();

 private:
  Memory memory_;
  size_t count_ = 0;
  std::unique_ptr<float, PageUnmap> mapping_;
  Buffer<float> heap_;  // where there is no mapping of our own (see above)
};

}  // namespace strata::zero
