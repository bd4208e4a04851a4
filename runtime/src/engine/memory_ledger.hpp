// Per-rank accounting of the bytes the runtime and its plugins hold, by category and location.
// Plugins allocate through it (host-services alloc_bytes / alloc_bytes_at) and record what they
// hold elsewhere, such as files (account_bytes); host-owned parameters and gradients are recorded
// at registration so that the report covers the whole model state.
#pragma once

#include <strata/strata.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace strata::rt {

class MemoryLedger {
 public:
  MemoryLedger() = default;
  MemoryLedger(const MemoryLedger&) = delete;
  MemoryLedger& operator=(const MemoryLedger&) = delete;
  ~MemoryLedger();

  // Thread-safe. `location` is STRATA_MEM_HOST or STRATA_MEM_HOST_PINNED (page-locked with mlock).
  // Returns nullptr on failure, an invalid category or location, or when the system refuses to
  // lock the pages; errno then says why.
  void* allocate(size_t bytes, size_t alignment, int32_t category,
                 int32_t location = STRATA_MEM_HOST);
  // Thread-safe. cudaMalloc on CUDA device `ordinal` (cuda_device.hpp), counted at
  // STRATA_MEM_DEVICE; release() frees it. nullptr on failure (an invalid category, a build without
  // CUDA, no such device, out of memory) with *why saying which.
  void* allocate_device(size_t bytes, int32_t category, int ordinal, std::string* why);
  void release(void* ptr);
  // Stops accounting `ptr` and never frees it: for memory a thread that cannot be stopped may still
  // read while the process ends (a failed rank's checkpoint writer).
  void abandon(void* ptr);

  // Memory someone else owns (the host's params and grads), counted without allocating.
  void record(strata_mem_category category, uint64_t bytes,
              strata_mem_location location = STRATA_MEM_HOST);
  // Adds `delta` bytes held outside the allocator (files, foreign device memory). Returns false,
  // changing nothing, for an invalid category or location. Giving back more than was accounted
  // is a caller bug: the count stops at zero and the error is logged.
  bool account(int32_t category, int32_t location, int64_t delta);

  strata_memory_report report() const;
  // "params=940.0 KiB grads=... master=... optimizer_state=1.5 MiB pinned + 96.0 MiB on disk ..."
  std::string summary() const;

 private:
  void add(int32_t category, int32_t location, uint64_t bytes);  // caller holds mutex_
  void subtract(int32_t category, int32_t location, uint64_t bytes);  // caller holds mutex_
  struct Allocation {
    size_t bytes;       // what was asked for (and counted)
    size_t allocated;   // what aligned_alloc or mmap handed out (and, when pinned, locked)
    int32_t category;
    int32_t location;
    bool mapped;        // pages of its own (mmap), see kMappedMin
  };
  mutable std::mutex mutex_;
  std::unordered_map<void*, Allocation> live_;
  uint64_t located_[STRATA_MEM_LOCATION_COUNT][STRATA_MEM_CATEGORY_COUNT] = {};
  uint64_t peak_[STRATA_MEM_CATEGORY_COUNT] = {};  // of memory: every location but disk
};

}  // namespace strata::rt
