// Optimizer state in host memory: device none and cpu.
#include <cstdio>
#include <cstring>

#include "state_store.hpp"

namespace strata::offload {
namespace {

class MemoryStore final : public StateStore {
 public:
  MemoryStore(const sdk::Host& host, const StateLayout& layout, bool pinned) : host_(host) {
    const uint64_t floats = layout.floats_per_element * layout.elements();
    bytes_ = floats * sizeof(float);
    if (floats > 0 && pinned) {
      data_ = static_cast<float*>(host_.try_alloc_pinned(bytes_, STRATA_MEM_OPTIMIZER_STATE));
      pinned_ = data_ != nullptr;
      if (!pinned_) {
        host_.log(STRATA_LOG_WARN,
                  "offload_optimizer.pin_memory: the system refused to lock %s of optimizer "
                  "state (RLIMIT_MEMLOCK, or a host older than ABI 1.2); it stays pageable",
                  format_bytes(bytes_).c_str());
      }
    }
    if (floats > 0 && data_ == nullptr) {
      data_ = static_cast<float*>(host_.alloc(bytes_, STRATA_MEM_OPTIMIZER_STATE));
    }
    if (data_ != nullptr) std::memset(data_, 0, bytes_);
    slices_ = whole_shard_slices(layout, data_);
  }
  ~MemoryStore() override {
    if (data_ != nullptr) host_.free(data_);
  }
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  void for_each_piece(const Visitor& visit) override { visit(slices_); }

  // A plain memcpy: the runtime's checkpoint pause is this copy.
  void copy_range(Direction direction, size_t shard, size_t slot, uint64_t first, uint64_t count,
                  float* data) override {
    if (count == 0) return;
    const StateSlice& s = slices_[shard];
    float* at = s.state + slot * s.count + first;
    if (direction == Direction::read) {
      std::memcpy(data, at, count * sizeof(float));
    } else {
      std::memcpy(at, data, count * sizeof(float));
    }
  }

  std::string describe() const override {
    return "host memory, " + format_bytes(bytes_) + (pinned_ ? " pinned" : " pageable");
  }

 private:
  sdk::Host host_;
  float* data_ = nullptr;
  uint64_t bytes_ = 0;
  bool pinned_ = false;
  std::vector<StateSlice> slices_;
};

}  // namespace

uint64_t StateLayout::elements() const {
  uint64_t n = 0;
  for (uint64_t c : shard_counts) n += c;
  return n;
}

std::vector<StateSlice> whole_shard_slices(const StateLayout& layout, float* block) {
  std::vector<StateSlice> slices;
  float* next = block;
  for (size_t i = 0; i < layout.shard_counts.size(); ++i) {
    const uint64_t count = layout.shard_counts[i];
    slices.push_back({i, 0, count, next});
    if (next != nullptr) next += layout.floats_per_element * count;
  }
  return slices;
}

std::unique_ptr<StateStore> make_memory_store(const sdk::Host& host, const StateLayout& layout,
                                              bool pinned) {
  return std::make_unique<MemoryStore>(host, layout, pinned);
}

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 5) {
    v /= 1024.0;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof text, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return text;
}

}  // namespace strata::offload
