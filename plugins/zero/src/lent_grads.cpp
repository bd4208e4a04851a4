#include "lent_grads.hpp"

#include "dtype_cast.hpp"

namespace strata::zero {

LentGrads::LentGrads(const sdk::Host& host, const PartitionLayout& layout,
                     const std::vector<ParamRecord>& params, int32_t dtype, bool contiguous)
    : layout_(&layout), params_(&params), dtype_(dtype), contiguous_(contiguous),
      spares_(std::make_shared<SpareBuffers>(host)), buckets_(layout.buckets().size()),
      own_(params.size()), lent_(params.size(), 0), slot_offset_(params.size(), 0) {
  for (const Bucket& b : layout.plan().buckets) {
    for (const BucketSlot& s : b.slots) slot_offset_[s.param_index] = s.offset;
  }
}

void LentGrads::lend(const std::vector<uint32_t>& params) {
  for (uint32_t p : params) {
    const uint32_t b = layout_->plan().bucket_of[p];
    if ((*params_)[p].grad != nullptr || b == kNoBucket || lent_[p]) continue;
    BucketState& bucket = buckets_[b];
    if (contiguous_) {
      if (bucket.buffer.data() == nullptr) {
        const uint64_t padded = layout_->bucket(b).slice * static_cast<uint64_t>(layout_->ranks());
        bucket.buffer = spares_->take(padded * sdk::dtype_size(dtype_), STRATA_MEM_GRADS,
                                      /*zeroed=*/true);
      }
    } else if (own_[p].data() == nullptr) {
      own_[p] = spares_->take((*params_)[p].count * sdk::dtype_size(dtype_), STRATA_MEM_GRADS,
                              /*zeroed=*/true);
    }
    lent_[p] = 1;
    ++bucket.viewers;
  }
}

void LentGrads::unlend(const std::vector<uint32_t>& params) {
  for (uint32_t p : params) {
    if (!lent_[p]) continue;
    lent_[p] = 0;
    const uint32_t b = layout_->plan().bucket_of[p];
    --buckets_[b].viewers;
    maybe_free(b);
  }
}

void* LentGrads::view(uint32_t p) const {
  return lent_[p] ? const_cast<void*>(source(p)) : nullptr;
}

const void* LentGrads::source(uint32_t p) const {
  const uint32_t b = layout_->plan().bucket_of[p];
  if (b == kNoBucket) return nullptr;
  if (!contiguous_) return own_[p].data();
  const unsigned char* base = buckets_[b].buffer.data();
  return base == nullptr ? nullptr : element_at(base, dtype_, slot_offset_[p]);
}

void LentGrads::consumed(size_t b) {
  buckets_[b].consumed = true;
  maybe_free(b);
}

void LentGrads::maybe_free(size_t b) {
  BucketState& bucket = buckets_[b];
  if (!bucket.consumed || bucket.viewers > 0) return;
  spares_->give(std::move(bucket.buffer), STRATA_MEM_GRADS);
  for (const BucketSlot& s : layout_->plan().buckets[b].slots) {
    spares_->give(std::move(own_[s.param_index]), STRATA_MEM_GRADS);
  }
}

void LentGrads::new_round() {
  for (BucketState& bucket : buckets_) bucket.consumed = false;
  if (spares_) spares_->clear();
}

}  // namespace strata::zero
