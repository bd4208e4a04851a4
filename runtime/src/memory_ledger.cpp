#include "memory_ledger.hpp"

#include "log.hpp"

#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>

namespace strata::rt {
namespace {

const char* const kCategoryNames[STRATA_MEM_CATEGORY_COUNT] = {
    "params", "grads", "master", "optimizer_state", "comm_buffers", "other"};

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

}  // namespace

MemoryLedger::~MemoryLedger() {
  // Plugins free what they allocated before they are destroyed; anything left is a plugin bug
  // worth a line in the log, but the memory is released either way.
  for (auto& [ptr, allocation] : live_) {
    logger().warn("memory: {} bytes of {} still allocated at shutdown", allocation.bytes,
                  kCategoryNames[allocation.category]);
    std::free(ptr);
  }
}

void* MemoryLedger::allocate(size_t bytes, size_t alignment, int32_t category) {
  if (category < 0 || category >= STRATA_MEM_CATEGORY_COUNT) return nullptr;
  alignment = std::max(alignment, sizeof(void*));
  if ((alignment & (alignment - 1)) != 0) return nullptr;  // aligned_alloc needs a power of two
  const size_t rounded = std::max<size_t>((bytes + alignment - 1) / alignment * alignment, alignment);
  void* ptr = std::aligned_alloc(alignment, rounded);
  if (ptr == nullptr) return nullptr;
  std::lock_guard lock(mutex_);
  live_[ptr] = {bytes, category};
  add(category, bytes);
  return ptr;
}

void MemoryLedger::release(void* ptr) {
  if (ptr == nullptr) return;
  {
    std::lock_guard lock(mutex_);
    auto it = live_.find(ptr);
    if (it == live_.end()) {
      logger().error("memory: free of a pointer not allocated through the host table");
      return;  // not ours: freeing it would corrupt the heap
    }
    current_[it->second.category] -= it->second.bytes;
    live_.erase(it);
  }
  std::free(ptr);
}

void MemoryLedger::record(strata_mem_category category, uint64_t bytes) {
  std::lock_guard lock(mutex_);
  add(category, bytes);
}

void MemoryLedger::add(int32_t category, uint64_t bytes) {
  current_[category] += bytes;
  peak_[category] = std::max(peak_[category], current_[category]);
}

strata_memory_report MemoryLedger::report() const {
  std::lock_guard lock(mutex_);
  strata_memory_report out{};
  out.struct_size = sizeof(out);
  std::copy(std::begin(current_), std::end(current_), out.current);
  std::copy(std::begin(peak_), std::end(peak_), out.peak);
  return out;
}

std::string MemoryLedger::summary() const {
  const strata_memory_report r = report();
  std::string line;
  for (int c = 0; c < STRATA_MEM_CATEGORY_COUNT; ++c) {
    if (c != 0) line += ' ';
    line += fmt::format("{}={}", kCategoryNames[c], human_bytes(r.current[c]));
  }
  return line;
}

}  // namespace strata::rt
