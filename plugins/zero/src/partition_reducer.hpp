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
// already holds in that form, or one of the reducer's fusion buffers the target fills. A bucket
// whose slice S is larger than the piece size c (reduce_piece()) travels in pieces, like publish
// allgathers: piece o gathers [r*S + o, r*S + o + c) of every rank r's block into N*c floats and
// reduce-scatters them into c, which is the rank's slice elements [o, o + c). So the fusion
// buffers are bounded by the bucket capacity, not by the largest parameter (which gets a bucket
// of its own). Pieces of a bucket are issued in order, all when the bucket starts. With overlap
// at most two pieces are in flight (starting a third waits for the oldest); without, each
// reduction blocks. The averaged elements are handed to the target as each piece completes.
//
// communication_data_type f16/bf16: each piece is gathered in fp32 as above, rounded to that dtype
// into a second send buffer, reduce-scattered in it (half the bytes) and the average widened back
// to fp32 before the target gets it. With fp32 (the default) nothing is rounded: the target gets
// the comm plugin's fp32 average of the fp32 values, as stage 0's allreduce gives it.
//
// Timeline spans, index = bucket: "bucket_reduce" from its first piece's start to its last
// piece's completion, "bucket_pack" per piece gathered into a fusion buffer, "bucket_unpack" per
// piece handed to the target.
#pragma once

#include "device_memory.hpp"
#include "comm_link.hpp"
#include "dtype_cast.hpp"
#include "partition_layout.hpp"

#include <strata/plugin.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <vector>

namespace strata::zero {

// The piece size c for `reduce_bucket_size` elements over `ranks`: ceil(reduce_bucket_size / N)
// rounded up to a multiple of 16, so a bucket within the capacity always travels whole.
uint64_t reduce_piece(uint64_t reduce_bucket_size, int ranks);

// For ReduceTarget::fill: writes the flat range [first, first + count) of bucket b into `out`
// (in `memory`), read(slot, param_offset, dst, n) for every part of a parameter in it and zeros
// elsewhere.
template <class Read>
void fill_range(const Memory& memory, const PartitionLayout& layout, size_t b, uint64_t first,
                uint64_t count, float* out, Read&& read) {
  uint64_t at = first;  // first flat element not yet written
  layout.for_each_piece(b, first, count,
                        [&](const BucketSlot& slot, uint64_t param_offset, uint64_t flat,
                            uint64_t n) {
                          memory.zero(out + (at - first), (flat - at) * sizeof(float));
                          read(slot, param_offset, out + (flat - first), n);
                          at = flat + n;
                        });
  memory.zero(out + (at - first), (first + count - at) * sizeof(float));
}

// Where a stage's gradients come from and where the reduced slices go.
class ReduceTarget {
 public:
  virtual ~ReduceTarget() = default;
  // An fp32 buffer of N*S elements holding bucket b's gradients with zeroed padding, to be sent
  // (or copied from, piece by piece) and left untouched until completed(b); nullptr to have
  // fill() write fusion buffers.
  virtual const float* ready_buffer(size_t /*bucket*/) { return nullptr; }
  // Writes the flat range [first, first + count) of bucket b's gradients as fp32 into `out`:
  // parameter elements at their positions, padding 0. Each flat element is asked for once a round.
  virtual void fill(size_t bucket, uint64_t first, uint64_t count, float* out) = 0;
  // Every piece of bucket b has started (its sources have been read unless ready_buffer).
  virtual void sent(size_t /*bucket*/) {}
  // This rank's averaged elements [offset, offset + count) of its slice of bucket b.
  virtual void deliver(size_t bucket, uint64_t offset, uint64_t count, const float* values) = 0;
  // Every piece of bucket b has been delivered.
  virtual void completed(size_t /*bucket*/) {}
};

class PartitionReducer {
 public:
  // Allocates its fusion buffers (STRATA_MEM_COMM_BUFFERS): 1 or 2 (overlap) pairs of N*w and
  // w floats, w = min(S_max, piece), and with a `comm_dtype` other than fp32 as many pairs of
  // that dtype. `layout` and `target` must outlive the reducer.
  PartitionReducer(const sdk::Host& host, CommLink& comm, const PartitionLayout& layout,
                   size_t params, ReduceTarget& target, bool overlap, uint64_t piece,
                   int32_t comm_dtype = STRATA_F32);
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
    Buffer<float> send, recv;
    Buffer<unsigned char> narrow_send, narrow_recv;  // comm_dtype_ other than fp32
  };
  struct Pending {
    size_t bucket;
    size_t fusion;
    uint64_t offset;  // within the rank's slice
    uint64_t count;
    bool last;        // the bucket's last piece
    int64_t begin_ns;  // when the bucket's first piece started (its "bucket_reduce" span)
    strata_request request;
  };

  void start_one(size_t bucket);
  // Writes piece [offset, offset + count) of every rank's block of bucket b into `send`.
  void gather_piece(size_t bucket, const float* ready, uint64_t offset, uint64_t count,
                    float* send);
  void wait_oldest();

  CommLink& comm_;
  const PartitionLayout& layout_;
  ReduceTarget& target_;
  sdk::Tracer tracer_;
  Memory memory_;  // where the fusion buffers and the gradients are
  Caster caster_;
  int32_t comm_dtype_;
  bool overlap_;
  uint64_t piece_;
  std::vector<Fusion> fusion_;
  std::vector<size_t> free_fusion_;
  std::deque<Pending> pending_;
  std::vector<uint8_t> marked_;      // per parameter, this round
  std::vector<size_t> marked_in_;    // per bucket: its parameters marked this round
  size_t next_ = 0;                  // buckets [0, next_) have started this round
};

}  // namespace strata::zero
