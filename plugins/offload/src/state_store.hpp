// Where the optimizer state lives between steps. The optimizer sees the state only through
// for_each_piece: every element of every shard is visited exactly once per call, with its state
// loaded in memory; what the visitor writes is kept (in place for memory, written back for files).
// Checkpoints (ABI 1.6) read and write it by range of one slot instead: copy_range.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <strata/plugin.hpp>
#include <vector>

#include "offload_config.hpp"

namespace strata::offload {

// A run of one shard's elements and where their state is right now: `floats_per_element` arrays
// of `count` floats each, one after the other, starting at `state` (nullptr when there is no state).
struct StateSlice {
  size_t shard;    // index into the shard list given to init_state
  uint64_t begin;  // first element within that shard
  uint64_t count;
  float* state;
};

// The shards' element counts, in order: all a store needs to know about the model.
struct StateLayout {
  std::vector<uint64_t> shard_counts;
  size_t floats_per_element = 0;
  uint64_t elements() const;
};

// One slice per shard, whole, over a block that holds the shards' state one after another
// (floats_per_element floats per element); NULL states when `block` is NULL (no elements).
std::vector<StateSlice> whole_shard_slices(const StateLayout& layout, float* block);

class StateStore {
 public:
  virtual ~StateStore() = default;
  using Visitor = std::function<void(std::span<const StateSlice>)>;
  // Not reentrant; one thread at a time (the optimizer's step).
  virtual void for_each_piece(const Visitor& visit) = 0;
  // For the log: "host memory, 1.5 MiB pinned", "4 pieces in /nvme/..., 2 buffers".
  virtual std::string describe() const = 0;

  enum class Direction { read, write };
  // Copies elements [first, first + count) of slot `slot` of shard `shard` out of the store into
  // `data` (read) or from `data` into the store (write). Slot s of a run of n elements is the
  // s-th array of n floats at the run's state (StateSlice). Between steps only; the caller has
  // checked shard, slot and range against the layout. A write is in place when for_each_piece
  // next hands the state over.
  virtual void copy_range(Direction direction, size_t shard, size_t slot, uint64_t first,
                          uint64_t count, float* data) = 0;
};

// State in host memory (device none or cpu): one zeroed allocation, one piece holding every shard.
// `pinned` asks for page-locked memory and falls back to pageable memory with a warning when the
// system refuses (RLIMIT_MEMLOCK).
std::unique_ptr<StateStore> make_memory_store(const sdk::Host& host, const StateLayout& layout,
                                              bool pinned);

// State in CUDA device memory (device none with shards on a device; device_state_store.cpp).
std::unique_ptr<StateStore> make_device_store(const sdk::Host& host, const StateLayout& layout);

// State in a file under config.nvme_path, streamed in sub_group_size pieces (nvme_state_store.cpp).
std::unique_ptr<StateStore> make_nvme_store(const sdk::Host& host, const StateLayout& layout,
                                            const OffloadConfig& config);

// "1.5 MiB", "96.0 GiB": for messages.
std::string format_bytes(uint64_t bytes);

}  // namespace strata::offload
