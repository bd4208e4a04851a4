#include "stage0_reducer.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

namespace strata::zero {

Stage0Reducer::Stage0Reducer(const sdk::Host& host, CommLink& comm,
                             const std::vector<ParamRecord>& params, BucketPlan plan)
    : comm_(comm), params_(params), plan_(std::move(plan)), state_(plan_.buckets.size()),
      ready_(params.size(), 0) {
  for (size_t k = 0; k < plan_.buckets.size(); ++k) {
    const Bucket& bucket = plan_.buckets[k];
    if (!bucket.in_place) {
      state_[k].fusion = sdk::HostArray<float>(host, bucket.count, STRATA_MEM_COMM_BUFFERS);
    }
  }
}

Stage0Reducer::~Stage0Reducer() {
  for (BucketState& s : state_) {
    if (s.request == nullptr) continue;
    strata_request req = s.request;
    s.request = nullptr;
    try {
      comm_.wait(req);
    } catch (...) {
      // Nothing to report to from a destructor; the request is freed either way.
    }
  }
}

void Stage0Reducer::mark_ready(uint32_t index) {
  if (ready_[index]) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              "grad_ready: parameter " + std::to_string(index) + " (" + params_[index].name +
                  ") was already reported ready in this step");
  }
  ready_[index] = 1;
  const uint32_t bucket = plan_.bucket_of[index];
  if (bucket == kNoBucket) return;  // an empty parameter has nothing to reduce
  ++state_[bucket].ready;
  start_complete_buckets();
}

void Stage0Reducer::start_complete_buckets() {
  const size_t before = next_to_start_;
  while (next_to_start_ < plan_.buckets.size() &&
         state_[next_to_start_].ready == plan_.buckets[next_to_start_].slots.size()) {
    start(next_to_start_++);
  }
  // Nothing new to start: give the transport a chance to progress what is in flight.
  if (next_to_start_ == before && next_to_start_ > 0) {
    comm_.poke(state_[next_to_start_ - 1].request);
  }
}

void Stage0Reducer::start(size_t k) {
  const Bucket& bucket = plan_.buckets[k];
  BucketState& s = state_[k];
  float* data = nullptr;
  if (bucket.in_place) {
    data = grad_of(bucket.slots.front().param_index);
  } else {
    data = s.fusion.data();
    for (const BucketSlot& slot : bucket.slots) {
      std::memcpy(data + slot.offset, grad_of(slot.param_index), slot.count * sizeof(float));
    }
  }
  s.request = comm_.start_allreduce(data, data, bucket.count, STRATA_AVG);
}

void Stage0Reducer::wait_and_unpack(size_t k) {
  BucketState& s = state_[k];
  strata_request req = s.request;
  s.request = nullptr;  // wait() frees it whatever happens
  comm_.wait(req);
  const Bucket& bucket = plan_.buckets[k];
  if (bucket.in_place) return;
  for (const BucketSlot& slot : bucket.slots) {
    std::memcpy(grad_of(slot.param_index), s.fusion.data() + slot.offset,
                slot.count * sizeof(float));
  }
}

void Stage0Reducer::finish() {
  while (next_to_start_ < plan_.buckets.size()) start(next_to_start_++);
  for (size_t k = 0; k < plan_.buckets.size(); ++k) wait_and_unpack(k);
  reset_step();
}

void Stage0Reducer::reset_step() {
  std::fill(ready_.begin(), ready_.end(), 0);
  for (BucketState& s : state_) s.ready = 0;
  next_to_start_ = 0;
}

}  // namespace strata::zero
