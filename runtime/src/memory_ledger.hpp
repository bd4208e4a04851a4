// Per-rank accounting of the bytes the runtime and its plugins hold, by category. Plugins allocate
// through it (host-services alloc_bytes); host-owned parameters and gradients are recorded at
// registration so that the report covers the whole model state.
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

  // Thread-safe. Returns nullptr on failure or an invalid category.
  void* allocate(size_t bytes, size_t alignment, int32_t category);
  void release(void* ptr);

  // Memory someone else owns (the host's params and grads), counted without allocating.
  void record(strata_mem_category category, uint64_t bytes);

  strata_memory_report report() const;
  // "params=940.0 KiB grads=... master=... optimizer_state=... comm_buffers=... other=..."
  std::string summary() const;

 private:
  void add(int32_t category, uint64_t bytes);  // caller holds mutex_
  struct Allocation {
    size_t bytes;
    int32_t category;
  };
  mutable std::mutex mutex_;
  std::unordered_map<void*, Allocation> live_;
  uint64_t current_[STRATA_MEM_CATEGORY_COUNT] = {};
  uint64_t peak_[STRATA_MEM_CATEGORY_COUNT] = {};
};

}  // namespace strata::rt
