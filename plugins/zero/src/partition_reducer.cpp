#include "partition_reducer.hpp"

#include <algorithm>
#include <map>

namespace strata::zero {

PartitionReducer::PartitionReducer(const sdk::Host& host, CommLink& comm,
                                   const PartitionLayout& layout, size_t params,
                                   ReduceTarget& target, bool overlap)
    : comm_(comm), layout_(layout), target_(target), overlap_(overlap), marked_(params, 0),
      marked_in_(layout.buckets().size(), 0) {
  if (layout.buckets().empty()) return;
  const uint64_t slice = layout.max_slice();
  const auto ranks = static_cast<uint64_t>(layout.ranks());
  const size_t pairs = overlap ? 2 : 1;
  for (size_t i = 0; i < pairs; ++i) {
    fusion_.push_back({sdk::HostArray<float>(host, ranks * slice, STRATA_MEM_COMM_BUFFERS),
                       sdk::HostArray<float>(host, slice, STRATA_MEM_COMM_BUFFERS)});
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
  if (free_fusion_.empty()) wait_oldest();
  const size_t f = free_fusion_.back();
  free_fusion_.pop_back();
  const BucketPartition& part = layout_.bucket(b);
  const float* send = target_.ready_buffer(b);
  if (send == nullptr) {
    target_.fill(b, fusion_[f].send.data());
    send = fusion_[f].send.data();
  }
  pending_.push_back({b, f, nullptr});
  pending_.back().request = comm_.start_reduce_scatter(send, fusion_[f].recv.data(), part.slice,
                                                       STRATA_AVG);
  target_.sent(b);
  if (!overlap_) wait_oldest();
}

void PartitionReducer::wait_oldest() {
  Pending p = pending_.front();
  pending_.pop_front();
  free_fusion_.push_back(p.fusion);  // wait() frees the request whatever happens
  comm_.wait(p.request);
  target_.deliver(p.bucket, fusion_[p.fusion].recv.data());
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
