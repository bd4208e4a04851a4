// Buffers that come and go by the hundred per step (stage 3's gathered parameters, the gradient
// buffers lent for backward), kept for reuse instead of being unmapped and mapped again.
//
// A buffer large enough to be mapped on its own pages costs, when new, a page fault and the
// kernel's zeroing per page, and munmap when freed: for a gathered layer that is a second pass
// over every byte, paid by every rank on every gather. A spare of the same size and category
// skips all of it. The spares and the buffers in use together never hold more than the buffers
// in use alone once held (their peak): a buffer given back is kept only within that bound, and
// a new buffer that raises what is in use frees spares to stay within it. So keeping spares does
// not raise the peak of these buffers; the process's peak can still rise where spares sit beside
// the host's own allocations (plugins/zero/README.md gives a measurement). Owners whose buffers
// are in use at the same time (stage 3's gathered parameters and lent gradients, in backward)
// share one instance, so that the bound holds for their sum. clear() frees the spares: stage 3
// calls it where backward starts and (through the lent gradients, which own the instance) at the
// end of every micro-batch, so that between steps only the partitions remain.
//
// STRATA_ZERO_SPARE_BUFFERS=0 (read when an instance is made) keeps no spares: every buffer is
// freed when given back, so that the memory report shows exactly the buffers in use (tests,
// debugging). Not thread-safe: the owners call it from the thread that makes the plugin's calls.
#pragma once

#include "device_memory.hpp"

#include <strata/plugin.hpp>

#include <cstdint>
#include <vector>

namespace strata::zero {

class SpareBuffers {
 public:
  explicit SpareBuffers(const sdk::Host& host);
  ~SpareBuffers() = default;
  SpareBuffers(const SpareBuffers&) = delete;
  SpareBuffers& operator=(const SpareBuffers&) = delete;

  // A buffer of `bytes` in `category`: a spare of that size and category, else a new one.
  // Zeroed when `zeroed` (a spare holds what its last user left); otherwise the caller writes
  // every byte before reading.
  Buffer<unsigned char> take(uint64_t bytes, strata_mem_category category, bool zeroed);
  // A buffer from take(..., category, ...) is no longer used.
  void give(Buffer<unsigned char> buffer, strata_mem_category category);
  // Frees every spare.
  void clear();

 private:
  struct Spare {
    Buffer<unsigned char> buffer;
    strata_mem_category category;
  };
  void trim();  // frees spares until used_ + spare_ <= peak_

  sdk::Host host_;
  bool keep_ = true;  // STRATA_ZERO_SPARE_BUFFERS is not "0"
  std::vector<Spare> spares_;
  uint64_t used_ = 0;   // bytes taken and not given back
  uint64_t peak_ = 0;   // the most used_ has been
  uint64_t spare_ = 0;  // bytes in spares_
};

}  // namespace strata::zero
