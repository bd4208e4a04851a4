#include "partition_reducer.hpp"

#include <algorithm>
#include <cstring>
#include <map>

namespace strata::zero {

uint64_t reduce_piece(uint64_t reduce_bucket_size, int ranks) {
  const auto n = static_cast<uint64_t>(ranks);
  const uint64_t per_rank = (reduce_bucket_size + n - 1) / n;
  const uint64_t rounded = (per_rank + kSliceAlignment - 1) / kSliceAlignment * kSliceAlignment;
  return std::max(kSliceAlignment, rounded);
}

PartitionReducer::PartitionReducer(const sdk::Host& host, CommLink& comm,
                                   const PartitionLayout& layout, size_t params,
                                   ReduceTarget& target, bool overlap, uint64_t piece,
                                   int32_t comm_dtype)
    : comm_(comm), layout_(layout), target_(target), tracer_(host), memory_(host), caster_(host),
      comm_dtype_(comm_dtype), overlap_(overlap),
      piece_(std::max(piece, kSliceAlignment)), marked_(params, 0),
      marked_in_(layout.buckets().size(), 0) {
  comm_.require_reduce_dtype(comm_dtype_, "communication_data_type");
  caster_.require(comm_dtype_, "communication_data_type");
  if (layout.buckets().empty()) return;
  const uint64_t slice = std::min(layout.max_slice(), piece_);
  const auto ranks = static_cast<uint64_t>(layout.ranks());
  const size_t pairs = overlap ? 2 : 1;
  for (size_t i = 0; i < pairs; ++i) {
    fusion_.push_back({Buffer<float>(host, ranks * slice, STRATA_MEM_COMM_BUFFERS),
                       Buffer<float>(host, slice, STRATA_MEM_COMM_BUFFERS), {}, {}});
    if (comm_dtype_ != STRATA_F32) {
      const size_t esize = sdk::dtype_size(comm_dtype_);
      fusion_.back().narrow_send =
          Buffer<unsigned char>(host, ranks * slice * esize, STRATA_MEM_COMM_BUFFERS);
      fusion_.back().narrow_recv =
          Buffer<unsigned char>(host, slice * esize, STRATA_MEM_COMM_BUFFERS);
    }
    free_fusion_.push_back(pairs - 1 - i);
  }
}

PartitionReducer::~PartitionReducer() {
  for (Pending& p : pending_) {
    try {
      comm_.wait(p.request);
    } catch (...) {
      // Nothing to report to from a destructor; the request is freed either way.
    }
  }
}

bool PartitionReducer::mark(uint32_t index) {
  if (marked_[index]) return false;
  marked_[index] = 1;
  const uint32_t bucket = layout_.plan().bucket_of[index];
  if (bucket != kNoBucket) ++marked_in_[bucket];
  return true;
}

size_t PartitionReducer::startable(const std::vector<uint32_t>& extra) const {
  std::map<size_t, size_t> more;  // bucket -> parameters `extra` would add
  for (uint32_t p : extra) {
    const uint32_t b = layout_.plan().bucket_of[p];
    if (!marked_[p] && b != kNoBucket) ++more[b];
  }
  const auto& buckets = layout_.plan().buckets;
  size_t k = next_;
  while (k < buckets.size()) {
    const auto it = more.find(k);
    const size_t marked = marked_in_[k] + (it == more.end() ? 0 : it->second);
    if (marked < buckets[k].slots.size()) break;
    ++k;
  }
  return k - next_;
}

void PartitionReducer::start(size_t count) {
  const size_t end = std::min(next_ + count, layout_.buckets().size());
  while (next_ < end) start_one(next_++);
}

void PartitionReducer::start_one(size_t b) {
  const uint64_t slice = layout_.bucket(b).slice;
  const float* ready = target_.ready_buffer(b);
  int64_t begin_ns = 0;  // set when the first piece is packed
  uint64_t o = 0;
  do {  // an empty bucket (S = 0) is still one (empty) collective, alike on every rank
    const uint64_t n = std::min(piece_, slice - o);
    const bool last = o + n >= slice;
    if (free_fusion_.empty()) wait_oldest();
    const size_t f = free_fusion_.back();
    const float* send = fusion_[f].send.data();
    if (ready != nullptr && n == slice) {
      send = ready;  // one piece: the ready buffer is already laid out as the collective sends
    } else {
      const sdk::TraceScope span(tracer_, "bucket_pack", static_cast<int64_t>(b),
                                 n * static_cast<uint64_t>(layout_.ranks()) * sizeof(float));
      gather_piece(b, ready, o, n, fusion_[f].send.data());
    }
    if (o == 0) begin_ns = tracer_.now();
    free_fusion_.pop_back();
    pending_.push_back({b, f, o, n, last, begin_ns, nullptr});
    if (comm_dtype_ == STRATA_F32) {
      pending_.back().request = comm_.start_reduce_scatter(send, fusion_[f].recv.data(), n,
                                                           STRATA_AVG);
    } else {
      const uint64_t all = n * static_cast<uint64_t>(layout_.ranks());
      caster_.convert(send, STRATA_F32, fusion_[f].narrow_send.data(), comm_dtype_, all);
      pending_.back().request = comm_.start_reduce_scatter(
          fusion_[f].narrow_send.data(), fusion_[f].narrow_recv.data(), n, comm_dtype_,
          STRATA_AVG);
    }
    if (last) target_.sent(b);
    if (!overlap_) wait_oldest();
    o += n;
  } while (o < slice);
}

void PartitionReducer::gather_piece(size_t b, const float* ready, uint64_t o, uint64_t n,
                                    float* send) {
  const uint64_t slice = layout_.bucket(b).slice;
  const auto ranks = static_cast<uint64_t>(layout_.ranks());
  if (ready == nullptr && n == slice) {
    target_.fill(b, 0, ranks * slice, send);  // the whole bucket: one contiguous range
    return;
  }
  for (uint64_t r = 0; r < ranks; ++r) {
    const uint64_t first = r * slice + o;  // flat position of block r's piece
    if (ready != nullptr) {
      memory_.copy(send + r * n, ready + first, n * sizeof(float));
    } else {
      target_.fill(b, first, n, send + r * n);
    }
  }
}

void PartitionReducer::wait_oldest() {
  Pending p = pending_.front();
  pending_.pop_front();
  free_fusion_.push_back(p.fusion);  // wait() frees the request whatever happens
  comm_.wait(p.request);
  const auto bucket = static_cast<int64_t>(p.bucket);
  if (p.last) {
    const uint64_t sent = layout_.bucket(p.bucket).slice * static_cast<uint64_t>(layout_.ranks());
    tracer_.in_flight("bucket_reduce", p.begin_ns, bucket, sent * sizeof(float));
  }
  {
    const sdk::TraceScope span(tracer_, "bucket_unpack", bucket, p.count * sizeof(float));
    if (comm_dtype_ != STRATA_F32) {
      caster_.convert(fusion_[p.fusion].narrow_recv.data(), comm_dtype_,
                      fusion_[p.fusion].recv.data(), STRATA_F32, p.count);
    }
    target_.deliver(p.bucket, p.offset, p.count, fusion_[p.fusion].recv.data());
  }
  if (p.last) target_.completed(p.bucket);
}

void PartitionReducer::finish_round() {
  start(layout_.buckets().size());
  while (!pending_.empty()) wait_oldest();
  reset_round();
}

void PartitionReducer::reset_round() {
  std::fill(marked_.begin(), marked_.end(), 0);
  std::fill(marked_in_.begin(), marked_in_.end(), 0);
  next_ = 0;
}

}  // namespace strata::zero
