#include "param_gatherer.hpp"

#include "dtype_cast.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace strata::zero {

namespace {

// Debug builds poison freed gathered buffers so that a stale pointer reads NaN, not old values.
[[maybe_unused]] void fill_nan(void* data, int32_t dtype, uint64_t count) {
  const uint32_t f32 = 0x7fc00000u;
  const uint16_t f16 = 0x7e00u, bf16 = 0x7fc0u;
  for (uint64_t i = 0; i < count; ++i) {
    void* at = element_at(data, dtype, i);
    if (dtype == STRATA_F32) std::memcpy(at, &f32, sizeof f32);
    if (dtype == STRATA_F16) std::memcpy(at, &f16, sizeof f16);
    if (dtype == STRATA_BF16) std::memcpy(at, &bf16, sizeof bf16);
  }
}

}  // namespace

ParamGatherer::ParamGatherer(const sdk::Host& host, CommLink& comm, const PartitionLayout& layout,
                             const std::vector<ParamRecord>& params, const GroupState& groups,
                             int32_t dtype, const ZeroConfig& config, float* masters,
                             const ParamStore& store, uint64_t masters_at,
                             std::shared_ptr<SpareBuffers> spares)
    : host_(host), comm_(comm), layout_(layout), params_(params), groups_(groups), dtype_(dtype),
      prefetch_limit_(config.prefetch_bucket_size), live_limit_(config.max_live_parameters),
      reuse_distance_(config.max_reuse_distance),
      masters_(dtype == STRATA_F32 ? masters : nullptr), store_(store), masters_at_(masters_at),
      partition_(dtype == STRATA_F32 || store.active()
                     ? Buffer<unsigned char>()
                     : Buffer<unsigned char>(
                           host, layout.param_partition_elements() * sdk::dtype_size(dtype),
                           STRATA_MEM_PARAMS)),
      spares_(std::move(spares)), buckets_of_(groups.size()),
      elements_of_(groups.size(), 0), slot_offset_(params.size(), 0) {
  if (store.read_ahead_elements() > 0) {
    prefetch_limit_ = std::min(prefetch_limit_, store.read_ahead_elements());
  }
  for (size_t b = 0; b < layout.buckets().size(); ++b) {
    const Bucket& bucket = layout.plan().buckets[b];
    for (const BucketSlot& s : bucket.slots) slot_offset_[s.param_index] = s.offset;
    if (!layout.bucket(b).partitioned) continue;
    // Buckets never mix groups, and partitioned parameters are always in one.
    const uint32_t g = groups.group_of(bucket.slots.front().param_index);
    buckets_of_[g].push_back(b);
    elements_of_[g] += layout.bucket(b).slice * static_cast<uint64_t>(layout.ranks());
  }
}

// Reads still in flight need no wait here: the offload stratum is destroyed first (the runtime
// destroys strata in reverse order of creation), and its store drains its transfers then.
ParamGatherer::~ParamGatherer() {
  for (auto& [group, live] : live_) {
    for (Fetch& f : live.fetches) {
      try {
        comm_.wait(f.request);
      } catch (...) {
        // Nothing to report to from a destructor; the request is freed either way.
      }
    }
  }
}

void* ParamGatherer::slice(size_t b) const {
  if (masters_ != nullptr) return masters_ + layout_.bucket(b).offset;
  void* base = store_.active() && !store_.on_disk() ? store_.memory() : partition_.data();
  if (base == nullptr) return nullptr;
  return element_at(base, dtype_, layout_.bucket(b).param_offset);
}

uint64_t ParamGatherer::store_offset(size_t b) const {
  if (dtype_ == STRATA_F32) return masters_at_ + layout_.bucket(b).offset * sizeof(float);
  return layout_.bucket(b).param_offset * sdk::dtype_size(dtype_);
}

void ParamGatherer::stage_partition() {
  if (!store_.on_disk() || dtype_ == STRATA_F32 || partition_.data() != nullptr) return;
  const uint64_t bytes = layout_.param_partition_elements() * sdk::dtype_size(dtype_);
  partition_ = Buffer<unsigned char>(host_, bytes, STRATA_MEM_PARAMS);
  store_.read(0, partition_.data(), bytes);
}

void ParamGatherer::unstage_partition() {
  if (!store_.on_disk() || partition_.data() == nullptr) return;
  store_.write(0, partition_.data(), partition_.size());
  partition_ = Buffer<unsigned char>();
}

void ParamGatherer::fill_from_params() {
  const Memory memory(host_);
  const size_t esize = sdk::dtype_size(dtype_);
  // On a drive each slice goes to the store through one slice-sized staging buffer, so that
  // finalize, where the host still holds its whole parameters, adds no partition-sized buffer.
  Buffer<unsigned char> staging;
  if (dtype_ != STRATA_F32 && store_.on_disk()) {
    staging = Buffer<unsigned char>(host_, layout_.max_slice() * esize, STRATA_MEM_PARAMS);
  }
  for (size_t b = 0; b < layout_.buckets().size() && dtype_ != STRATA_F32; ++b) {
    if (!layout_.bucket(b).partitioned) continue;
    const uint64_t begin = layout_.my_begin(b);
    const uint64_t slice_bytes = layout_.bucket(b).slice * esize;
    void* out = staging.data() != nullptr ? staging.data() : slice(b);
    if (staging.data() != nullptr) memory.zero(out, slice_bytes);  // the padding
    layout_.for_each_piece(b, begin, layout_.bucket(b).slice,
                           [&](const BucketSlot& slot, uint64_t param_offset, uint64_t flat,
                               uint64_t n) {
                             // Deferred values stay zero (zeroed partition, zeroed staging).
                             if (params_[slot.param_index].data == nullptr) return;
                             memory.copy(element_at(out, dtype_, flat - begin),
                                         element_at(params_[slot.param_index].data, dtype_,
                                                    param_offset),
                                         n * esize);
                           });
    if (staging.data() != nullptr) store_.write(store_offset(b), out, slice_bytes);
  }
#ifndef NDEBUG
  // From now on the host's own buffers of partitioned parameters are stale: make a read of
  // them visible (param_view says where the parameters are).
  for (uint32_t p = 0; p < params_.size(); ++p) {
    if (!partitioned(p) || params_[p].data == nullptr) continue;
    if (memory.on_device()) {
      memory.poison(params_[p].data, params_[p].count * sdk::dtype_size(dtype_));
    } else {
      fill_nan(params_[p].data, dtype_, params_[p].count);
    }
  }
#endif
}

unsigned char* ParamGatherer::gathered(size_t b) const {
  const uint32_t group = groups_.group_of(layout_.plan().buckets[b].slots.front().param_index);
  const auto it = live_.find(group);
  if (it == live_.end() || it->second.state != State::kGathered) return nullptr;
  for (const Fetch& f : it->second.fetches) {
    if (f.bucket == b) return f.buffer.data();
  }
  return nullptr;
}

const void* ParamGatherer::my_gathered_slice(size_t b) const {
  const unsigned char* whole = gathered(b);
  if (whole == nullptr) {
    sdk::fail(STRATA_ERR_INTERNAL, "zero: bucket " + std::to_string(b) + " is not gathered");
  }
  return element_at(whole, dtype_, layout_.my_begin(b));
}

void ParamGatherer::write_slice(size_t b, const void* values) {
  const uint64_t bytes = layout_.bucket(b).slice * sdk::dtype_size(dtype_);
  void* in_memory = slice(b);
  if (in_memory != nullptr) {
    Memory(host_).copy(in_memory, values, bytes);
  } else if (store_.on_disk()) {
    store_.write(store_offset(b), values, bytes);
  } else {
    sdk::fail(STRATA_ERR_INTERNAL, "zero: no parameter partition to write bucket " +
                                       std::to_string(b) + " into");
  }
}

bool ParamGatherer::partitioned(uint32_t param) const {
  const uint32_t b = layout_.plan().bucket_of[param];
  return b != kNoBucket && layout_.bucket(b).partitioned;
}

void* ParamGatherer::data(uint32_t param) const {
  unsigned char* whole = gathered(layout_.plan().bucket_of[param]);
  return whole == nullptr ? nullptr : element_at(whole, dtype_, slot_offset_[param]);
}

ParamGatherer::Live ParamGatherer::fetch(uint32_t group) {
  Live live;
  const size_t esize = sdk::dtype_size(dtype_);
  for (size_t b : buckets_of_[group]) {
    const uint64_t slice_elements = layout_.bucket(b).slice;
    Fetch f;
    f.bucket = b;
    f.buffer = spares_->take(slice_elements * static_cast<uint64_t>(layout_.ranks()) * esize,
                             STRATA_MEM_PARAMS, /*zeroed=*/false);
    if (store_.on_disk()) {
      // The read fills it whole.
      f.staged = Buffer<unsigned char>(host_, slice_elements * esize, STRATA_MEM_PARAMS,
                                       Uninitialized{});
      f.read = store_.start_read(store_offset(b), f.staged.data(), f.staged.size());
    } else {
      f.request = comm_.start_allgather(slice(b), f.buffer.data(), slice_elements, dtype_);
    }
    live.fetches.push_back(std::move(f));
  }
  return live;
}

void ParamGatherer::land(Fetch& f) {
  if (f.read == 0) return;
  const uint64_t ticket = f.read;
  f.read = 0;  // the store spends the ticket whatever happens
  store_.wait(ticket);
  f.request = comm_.start_allgather(f.staged.data(), f.buffer.data(), layout_.bucket(f.bucket).slice,
                                    dtype_);
}

void ParamGatherer::land_prefetched() {
  for (auto& [group, live] : live_) {
    if (live.state != State::kPrefetched) continue;
    for (Fetch& f : live.fetches) land(f);
  }
}

void ParamGatherer::complete(Live& live) {
  for (Fetch& f : live.fetches) {
    land(f);
    strata_request req = f.request;
    f.request = nullptr;  // wait() frees it whatever happens
    comm_.wait(req);
    f.staged = Buffer<unsigned char>();
  }
  live.state = State::kGathered;
}

void ParamGatherer::gather(uint32_t group, bool in_trace) {
  // Follow the trace: this gather is at position k of the step.
  const size_t k = trace_.size();
  if (in_trace) {
    following_ = following_ && k < last_trace_.size() && last_trace_[k] == group;
    trace_.push_back(group);
  }

  const uint64_t needed = elements_of_[group];
  land_prefetched();  // the reads started at the last gather: their allgathers go first
  auto it = live_.find(group);
  if (it != live_.end()) {
    complete(it->second);  // prefetched: wait; cached: nothing in flight, no communication
  } else if (needed > 0) {
    // The model needs it now: make room from what was kept ahead or behind, then gather even
    // if that is not enough (the limit bounds prefetching and retention, never this).
    if (live_elements() + needed > live_limit_) drop_all(State::kPrefetched);
    if (live_elements() + needed > live_limit_) drop_all(State::kCached);
    Live live = fetch(group);
    complete(live);
    live_.emplace(group, std::move(live));
  }
  if (in_trace && following_) {
    cursor_ = std::max(cursor_, k + 1);
    prefetch_ahead();
  }
}

void ParamGatherer::prefetch_ahead() {
  uint64_t in_flight = elements_in(State::kPrefetched);
  while (cursor_ < last_trace_.size()) {
    const uint32_t next = last_trace_[cursor_];
    const auto it = live_.find(next);
    if (it != live_.end()) {
      // Gathered now: look again once it is released. Prefetched or cached: nothing to fetch.
      if (it->second.state == State::kGathered) break;
      ++cursor_;
      continue;
    }
    const uint64_t e = elements_of_[next];
    if (e > 0) {
      if (in_flight + e > prefetch_limit_ || live_elements() + e > live_limit_) break;
      Live live = fetch(next);
      live.state = State::kPrefetched;
      live_.emplace(next, std::move(live));
      in_flight += e;
    }
    ++cursor_;
  }
}

void ParamGatherer::release(uint32_t group) {
  auto it = live_.find(group);
  if (it == live_.end()) return;  // nothing partitioned in it
  // Still gathered, so keeping it adds nothing; but an explicit gather may have gone over.
  if (reused_soon(group) && live_elements() <= live_limit_) {
    it->second.state = State::kCached;
    return;
  }
  drop(group);
}

bool ParamGatherer::reused_soon(uint32_t group) const {
  if (!following_ || reuse_distance_ == 0) return false;
  uint64_t distance = 0;  // elements gathered before `group` is gathered again
  for (size_t k = trace_.size(); k < last_trace_.size(); ++k) {
    if (last_trace_[k] == group) return distance < reuse_distance_;
    distance += elements_of_[last_trace_[k]];
    if (distance >= reuse_distance_) return false;
  }
  return false;
}

void ParamGatherer::drop(uint32_t group) {
  auto it = live_.find(group);
  complete(it->second);  // a prefetch still in flight must land before its buffers go
#ifndef NDEBUG
  for (Fetch& f : it->second.fetches) {
    fill_nan(f.buffer.data(), dtype_, layout_.bucket(f.bucket).slice * layout_.ranks());
  }
#endif
  for (Fetch& f : it->second.fetches) spares_->give(std::move(f.buffer), STRATA_MEM_PARAMS);
  live_.erase(it);
}

void ParamGatherer::drop_all(State state) {
  std::vector<uint32_t> groups;
  for (const auto& [group, live] : live_) {
    if (live.state == state) groups.push_back(group);
  }
  for (uint32_t g : groups) drop(g);
}

void ParamGatherer::end_micro_batch(bool boundary) {
  drop_all(State::kPrefetched);
  drop_all(State::kCached);
  cursor_ = trace_.size();  // what was dropped is not fetched again ahead of time
  if (!boundary) return;
  last_trace_ = std::move(trace_);
  trace_.clear();
  following_ = true;
  cursor_ = 0;
}

uint64_t ParamGatherer::live_elements() const {
  uint64_t total = 0;
  for (const auto& [group, live] : live_) total += elements_of_[group];
  return total;
}

uint64_t ParamGatherer::elements_in(State state) const {
  uint64_t total = 0;
  for (const auto& [group, live] : live_) {
    if (live.state == state) total += elements_of_[group];
  }
  return total;
}

}  // namespace strata::zero
