#include "engine/memory_ledger.hpp"

#include "device/cuda_device.hpp"
#include "log.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>

namespace strata::rt {
namespace {

const char* const kCategoryNames[STRATA_MEM_CATEGORY_COUNT] = {
    "params", "grads", "master", "optimizer_state", "comm_buffers", "other"};
const char* const kLocationNames[STRATA_MEM_LOCATION_COUNT] = {"host", "pinned", "device", "disk"};

bool valid_category(int32_t c) { return c >= 0 && c < STRATA_MEM_CATEGORY_COUNT; }
bool valid_location(int32_t l) { return l >= 0 && l < STRATA_MEM_LOCATION_COUNT; }

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

// One category of the summary: "1.0 MiB" on the host alone, "1.0 MiB pinned" in one other place,
// "2.0 MiB (1.0 MiB pinned, 512.0 KiB device)" when spread, and " + 96.0 MiB on disk" after.
std::string describe(const strata_memory_report& r, int c) {
  std::string text = human_bytes(r.current[c]);
  std::string elsewhere;
  int places = 0;
  for (int l : {STRATA_MEM_HOST_PINNED, STRATA_MEM_DEVICE}) {
    const uint64_t bytes = r.located[l][c];
    if (bytes == 0) continue;
    ++places;
    if (!elsewhere.empty()) elsewhere += ", ";
    elsewhere += bytes == r.current[c] ? std::string(kLocationNames[l])
                                       : human_bytes(bytes) + ' ' + kLocationNames[l];
  }
  if (places == 1 && r.located[STRATA_MEM_HOST][c] == 0) {
    text += ' ' + elsewhere;  // all of it in one non-host place: "1.5 MiB pinned"
  } else if (places > 0) {
    text += " (" + elsewhere + ')';
  }
  if (r.located[STRATA_MEM_DISK][c] != 0) {
    text += " + " + human_bytes(r.located[STRATA_MEM_DISK][c]) + " on disk";
  }
  return text;
}

// Host blocks from this size up are mapped pages of their own, so that freeing one returns its
// memory to the system at once. From the C library's heap they would not always: glibc raises
// its mmap threshold to the size of each mapped block freed (up to 32 MiB), after which blocks of
// that size come from the heap and stay in the process's RSS when freed (ZeRO stage 3 gathers and
// releases such blocks every layer; the RSS then kept what the runtime had released). Under
// AddressSanitizer every block stays on the heap, where overflows are caught.
#if defined(__SANITIZE_ADDRESS__)
constexpr size_t kMappedMin = SIZE_MAX;
#else
constexpr size_t kMappedMin = size_t{1} << 20;
#endif

// Returns one block of live_ to where it came from.
void free_block(void* ptr, int32_t location, size_t allocated, bool mapped) {
  if (location == STRATA_MEM_DEVICE) {
    cuda::device_free(ptr);
    return;
  }
  if (mapped) {
    munmap(ptr, allocated);  // unlocks pinned pages too
    return;
  }
  if (location == STRATA_MEM_HOST_PINNED) munlock(ptr, allocated);
  std::free(ptr);
}

}  // namespace

MemoryLedger::~MemoryLedger() {
  // Plugins free what they allocated before they are destroyed; anything left is a plugin bug
  // worth a line in the log, but the memory is released either way.
  for (auto& [ptr, allocation] : live_) {
    logger().warn("memory: {} bytes of {} still allocated at shutdown", allocation.bytes,
                  kCategoryNames[allocation.category]);
    free_block(ptr, allocation.location, allocation.allocated, allocation.mapped);
  }
}

void* MemoryLedger::allocate(size_t bytes, size_t alignment, int32_t category, int32_t location) {
  if (!valid_category(category) ||
      (location != STRATA_MEM_HOST && location != STRATA_MEM_HOST_PINNED)) {
    errno = EINVAL;
    return nullptr;
  }
  alignment = std::max(alignment, sizeof(void*));
  if ((alignment & (alignment - 1)) != 0) {  // aligned_alloc needs a power of two
    errno = EINVAL;
    return nullptr;
  }
  const bool pinned = location == STRATA_MEM_HOST_PINNED;
  // Locks do not nest: munlock of one block unlocks every page it touches. Pinned blocks get
  // whole pages to themselves so that freeing one never unlocks a neighbour.
  if (pinned) alignment = std::max(alignment, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t rounded = std::max<size_t>((bytes + alignment - 1) / alignment * alignment, alignment);
  const bool mapped = rounded >= kMappedMin && alignment <= page;
  void* ptr = nullptr;
  if (mapped) {
    rounded = (rounded + page - 1) / page * page;
    ptr = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ptr == MAP_FAILED) return nullptr;  // errno set by mmap
  } else {
    ptr = std::aligned_alloc(alignment, rounded);
    if (ptr == nullptr) return nullptr;
  }
  if (pinned && mlock(ptr, rounded) != 0) {
    const int why = errno;  // free() may not touch errno, but older C libraries did
    logger().debug("memory: mlock of {} bytes refused: {} (RLIMIT_MEMLOCK?)", rounded,
                   std::strerror(why));
    free_block(ptr, location, rounded, mapped);
    errno = why;
    return nullptr;
  }
  std::lock_guard lock(mutex_);
  live_[ptr] = {bytes, rounded, category, location, mapped};
  add(category, location, bytes);
  return ptr;
}

void MemoryLedger::abandon(void* ptr) {
  if (ptr == nullptr) return;
  std::lock_guard lock(mutex_);
  const auto it = live_.find(ptr);
  if (it == live_.end()) return;
  subtract(it->second.category, it->second.location, it->second.bytes);
  live_.erase(it);
}

void MemoryLedger::release(void* ptr) {
  if (ptr == nullptr) return;
  Allocation allocation{};
  {
    std::lock_guard lock(mutex_);
    auto it = live_.find(ptr);
    if (it == live_.end()) {
      logger().error("memory: free of a pointer not allocated through the host table");
      return;  // not ours: freeing it would corrupt the heap
    }
    allocation = it->second;
    subtract(allocation.category, allocation.location, allocation.bytes);
    live_.erase(it);
  }
  free_block(ptr, allocation.location, allocation.allocated, allocation.mapped);
}

void* MemoryLedger::allocate_device(size_t bytes, int32_t category, int ordinal, std::string* why) {
  if (!valid_category(category)) {
    if (why != nullptr) *why = "invalid category " + std::to_string(category);
    return nullptr;
  }
  void* ptr = cuda::device_alloc(ordinal, bytes, why);
  if (ptr == nullptr) return nullptr;
  std::lock_guard lock(mutex_);
  live_[ptr] = {bytes, bytes, category, STRATA_MEM_DEVICE, false};
  add(category, STRATA_MEM_DEVICE, bytes);
  return ptr;
}

void MemoryLedger::record(strata_mem_category category, uint64_t bytes,
                          strata_mem_location location) {
  std::lock_guard lock(mutex_);
  add(category, location, bytes);
}

bool MemoryLedger::account(int32_t category, int32_t location, int64_t delta) {
  if (!valid_category(category) || !valid_location(location)) return false;
  std::lock_guard lock(mutex_);
  if (delta >= 0) {
    add(category, location, static_cast<uint64_t>(delta));
    return true;
  }
  const uint64_t give_back = static_cast<uint64_t>(-(delta + 1)) + 1;  // -INT64_MIN overflows
  const uint64_t held = located_[location][category];
  if (give_back > held) {
    logger().error("memory: {} bytes of {} given back at {}, but only {} were accounted",
                   give_back, kCategoryNames[category], kLocationNames[location], held);
  }
  subtract(category, location, std::min(give_back, held));
  return true;
}

void MemoryLedger::add(int32_t category, int32_t location, uint64_t bytes) {
  located_[location][category] += bytes;
  if (location == STRATA_MEM_DISK) return;  // the peaks are of memory
  uint64_t memory = 0;
  for (int l = 0; l < STRATA_MEM_LOCATION_COUNT; ++l) {
    if (l != STRATA_MEM_DISK) memory += located_[l][category];
  }
  peak_[category] = std::max(peak_[category], memory);
}

void MemoryLedger::subtract(int32_t category, int32_t location, uint64_t bytes) {
  located_[location][category] -= bytes;
}

strata_memory_report MemoryLedger::report() const {
  std::lock_guard lock(mutex_);
  strata_memory_report out{};
  out.struct_size = sizeof(out);
  for (int c = 0; c < STRATA_MEM_CATEGORY_COUNT; ++c) {
    for (int l = 0; l < STRATA_MEM_LOCATION_COUNT; ++l) {
      out.located[l][c] = located_[l][c];
      if (l != STRATA_MEM_DISK) out.current[c] += located_[l][c];
    }
    out.peak[c] = peak_[c];
  }
  return out;
}

std::string MemoryLedger::summary() const {
  const strata_memory_report r = report();
  std::string line;
  for (int c = 0; c < STRATA_MEM_CATEGORY_COUNT; ++c) {
    if (c != 0) line += ' ';
    line += fmt::format("{}={}", kCategoryNames[c], describe(r, c));
  }
  return line;
}

}  // namespace strata::rt
