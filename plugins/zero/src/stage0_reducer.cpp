#include "stage0_reducer.hpp"

#include <algorithm>
#include <string>

namespace strata::zero {

Stage0Reducer::Stage0Reducer(CommLink& comm, const std::vector<ParamRecord>& params,
                             const BucketPlan& plan, BucketBuffers& buffers,
                             const sdk::Tracer& tracer, const sdk::Host& host, int32_t comm_dtype)
    : comm_(comm), params_(params), plan_(plan), buffers_(buffers), tracer_(tracer), host_(host),
      caster_(host), comm_dtype_(comm_dtype), state_(plan.buckets.size()),
      ready_(params.size(), 0) {
  comm_.require_reduce_dtype(comm_dtype_, "communication_data_type");
  caster_.require(comm_dtype_, "communication_data_type");
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
  float* data = buffers_.load(k);
  const uint64_t count = plan_.buckets[k].count;
  BucketState& s = state_[k];
  s.data = data;
  if (comm_dtype_ != STRATA_F32) {
    s.narrow = Buffer<unsigned char>(host_, count * sdk::dtype_size(comm_dtype_),
                                     STRATA_MEM_COMM_BUFFERS);
    caster_.convert(data, STRATA_F32, s.narrow.data(), comm_dtype_, count);
  }
  // The span starts after the pack (its own span) and covers the reduction in flight; a blocking
  // comm finishes inside start_allreduce, which the span then covers too.
  s.begin_ns = tracer_.now();
  s.request = comm_dtype_ == STRATA_F32
                  ? comm_.start_allreduce(data, data, count, STRATA_AVG)
                  : comm_.start_allreduce(s.narrow.data(), s.narrow.data(), count, comm_dtype_,
                                          STRATA_AVG);
}

void Stage0Reducer::wait_and_unpack(size_t k) {
  BucketState& s = state_[k];
  strata_request req = s.request;
  s.request = nullptr;  // wait() frees it whatever happens
  comm_.wait(req);
  tracer_.in_flight("bucket_reduce", s.begin_ns, static_cast<int64_t>(k),
               plan_.buckets[k].count * sizeof(float));
  if (s.narrow.data() != nullptr) {
    caster_.convert(s.narrow.data(), comm_dtype_, s.data, STRATA_F32, plan_.buckets[k].count);
    s.narrow = Buffer<unsigned char>();
  }
  buffers_.unload(k);
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
