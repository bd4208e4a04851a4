// Stages 1-3: reduce-scatters gradients bucket by bucket, so that each rank receives the average
// over ranks of its own slice of every bucket.
//
// Every rank must issue the same collectives in the same order, yet ranks may finish gradients in
// different orders (or never report some). So buckets start strictly in bucket order: bucket k
// starts only once all its parameters are marked AND buckets 0..k-1 have started (Stage0Reducer's
// rule); finish_round() starts whatever is left. Callers that interleave other collectives (the
// stage 2-3 sequence check) start buckets only at agreed points, up to the count every rank can
// start (startable(), agreed as a minimum over ranks).
//
// A bucket's gradients travel as fp32 N*S elements, padding zeroed: either a buffer the target
// already holds in that form, or one of the reducer's fusion buffers the target fills. With
// overlap at most two buckets are in flight (starting a third waits for the oldest); without,
// each reduction blocks. The averaged slice of S floats is handed to the target on completion.
#pragma once

#include "comm_link.hpp"
#include "partition_layout.hpp"

#include <strata/plugin.hpp>

#include <cstdint>
#include <deque>
#include <vector>

namespace strata::zero {

// Where a stage's gradients come from and where the reduced slices go.
class ReduceTarget {
 public:
  virtual ~ReduceTarget() = default;
  // An fp32 buffer of N*S elements holding bucket b's gradients with zeroed padding, to be sent
  // as is and left untouched until deliver(b); nullptr to have fill() write a fusion buffer.
  virtual const float* ready_buffer(size_t /*bucket*/) { return nullptr; }
  // Writes bucket b's gradients as fp32 into fusion[0, N*S): slots at their offsets, padding 0.
  virtual void fill(size_t bucket, float* fusion) = 0;
  // The reduction of bucket b has started (its sources have been read unless ready_buffer).
  virtual void sent(size_t /*bucket*/) {}
  // This rank's averaged slice of bucket b: S floats.
  virtual void deliver(size_t bucket, const float* slice) = 0;
};

class PartitionReducer {
 public:
  // Allocates its fusion buffers (STRATA_MEM_COMM_BUFFERS): 1 or 2 (overlap) pairs of N*S_max
  // and S_max floats. `layout` and `target` must outlive the reducer.
  PartitionReducer(const sdk::Host& host, CommLink& comm, const PartitionLayout& layout,
                   size_t params, ReduceTarget& target, bool overlap);
  // Completes reductions still in flight: the comm plugin may still write into our buffers.
  ~PartitionReducer();
  PartitionReducer(const PartitionReducer&) = delete;
  PartitionReducer& operator=(const PartitionReducer&) = delete;

  // Param `index` has its gradient for this round. Returns false if it was already marked.
  bool mark(uint32_t index);
  bool marked(uint32_t index) const { return marked_[index] != 0; }
  // How many buckets could start now, in order, from the first not started. With `extra`: as if
  // those parameters were marked too.
  size_t startable(const std::vector<uint32_t>& extra = {}) const;
  // Starts the next `count` buckets in order (they need not be complete: unmarked parameters
  // contribute what their sources hold).
  void start(size_t count);
  void start_complete() { start(startable()); }
  // Starts every bucket not yet started, waits for all and begins a new round. Collective.
  void finish_round();
  // True between the first bucket start of a round and finish_round().
  bool in_flight() const { return next_ > 0; }
  // Forgets this round's marks. Only when !in_flight().
  void reset_round();

 private:
  struct Fusion {
    sdk::HostArray<float> send, recv;
  };
  struct Pending {
    size_t bucket;
    size_t fusion;
    strata_request request;
  };

  void start_one(size_t bucket);
  void wait_oldest();

  CommLink& comm_;
  const PartitionLayout& layout_;
  ReduceTarget& target_;
  bool overlap_;
  std::vector<Fusion> fusion_;
  std::vector<size_t> free_fusion_;
  std::deque<Pending> pending_;
  std::vector<uint8_t> marked_;      // per parameter, this round
  std::vector<size_t> marked_in_;    // per bucket: its parameters marked this round
  size_t next_ = 0;                  // buckets [0, next_) have started this round
};

}  // namespace strata::zero
