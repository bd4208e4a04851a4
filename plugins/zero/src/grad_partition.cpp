#include "grad_partition.hpp"

#include "full_grads.hpp"

#include <algorithm>
#include <cstring>

namespace strata::zero {

GradPartition::GradPartition(const sdk::Host& host, const Caster& caster,
                             const PartitionLayout& layout, const std::vector<ParamRecord>& params,
                             int32_t dtype, bool contiguous, bool transient_only)
    : host_(host), caster_(caster), layout_(&layout), params_(&params), dtype_(dtype),
      transient_(transient_only),
      lent_(host, layout, params, dtype, contiguous), direct_(layout.buckets().size(), 0),
      holds_(layout.buckets().size(), 0) {
  if (!transient()) fp32();
}

void* GradPartition::view(uint32_t p) const {
  void* own = (*params_)[p].grad;
  return own != nullptr ? own : lent_.view(p);
}

float* GradPartition::fp32() {
  if (partition_.data() == nullptr) {
    partition_ = PageBuffer(host_, layout_->partition_elements(), STRATA_MEM_GRADS);
  }
  return partition_.data();
}

void GradPartition::zero() {
  const Memory memory(host_);
  if (transient()) {
    partition_ = PageBuffer();
  } else {
    partition_.clear();
  }
  std::fill(holds_.begin(), holds_.end(), 0);
  FullGrads::zero(*params_, memory);  // the host-owned ones (ours are lent, and freed once reduced)
}

const float* GradPartition::ready_buffer(size_t b) {
  void* whole = lent_.bucket_buffer(b);
  if (dtype_ != STRATA_F32 || whole == nullptr) return nullptr;
  // fp32 and contiguous: the lent bucket buffer is already what the reduction sends. Host-owned
  // gradients of the bucket join it, and the host starts the next micro-batch from zero.
  auto* out = static_cast<float*>(whole);
  const Memory memory(host_);
  for (const BucketSlot& slot : layout_->plan().buckets[b].slots) {
    void* host = (*params_)[slot.param_index].grad;
    if (host == nullptr) continue;
    memory.copy(out + slot.offset, host, slot.count * sizeof(float));
    memory.zero(host, slot.count * sizeof(float));
  }
  direct_[b] = 1;
  return out;
}

void GradPartition::fill(size_t b, uint64_t first, uint64_t count, float* out) {
  const size_t esize = sdk::dtype_size(dtype_);
  const Memory memory(host_);
  fill_range(memory, *layout_, b, first, count, out,
             [&](const BucketSlot& slot, uint64_t param_offset, float* dst, uint64_t n) {
               void* host = (*params_)[slot.param_index].grad;
               const void* source = host != nullptr ? host : lent_.source(slot.param_index);
               if (source == nullptr) {
                 memory.zero(dst, n * sizeof(float));
                 return;
               }
               caster_.convert(element_at(source, dtype_, param_offset), dtype_, dst, STRATA_F32,
                               n);
               // The host starts the next micro-batch from zero (only what was read is zeroed).
               if (host != nullptr) {
                 memory.zero(element_at(host, dtype_, param_offset), n * esize);
               }
             });
}

void GradPartition::sent(size_t b) {
  if (!direct_[b]) lent_.consumed(b);
}

void GradPartition::deliver(size_t b, uint64_t offset, uint64_t count, const float* values) {
  float* slice = fp32() + layout_->bucket(b).offset + offset;
  const Memory memory(host_);
  if (!holds_[b]) {
    // The step's first average of this slice is kept as it is, exactly as stage 0 keeps its
    // allreduce's result (adding it to zero would be exact too, but for -0).
    memory.copy(slice, values, count * sizeof(float));
  } else {
    memory.add(slice, values, count);
  }
}

void GradPartition::completed(size_t b) {
  holds_[b] = 1;  // every piece of the slice has been delivered this round
  if (direct_[b]) {
    direct_[b] = 0;
    lent_.consumed(b);
  }
}

}  // namespace strata::zero
