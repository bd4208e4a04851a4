#include "master_partition.hpp"

namespace strata::zero {

MasterPartition::MasterPartition(const sdk::Host& host, const Caster& caster,
                                 const PartitionLayout& layout,
                                 const std::vector<ParamRecord>& params, int32_t dtype,
                                 bool in_params)
    : layout_(&layout), dtype_(dtype), ranges_(layout.owned_ranges()) {
  if (in_params) {
    if (dtype != STRATA_F32) {
      sdk::fail(STRATA_ERR_INTERNAL, "masters in the parameters need an fp32 model");
    }
    for (const OwnedRange& r : ranges_) {
      add_shard(r, static_cast<float*>(params[r.param_index].data) + r.param_offset);
    }
    return;
  }
  master_ = Buffer<float>(host, layout.partition_elements(), STRATA_MEM_MASTER);
  for (size_t b = 0; b < layout.buckets().size(); ++b) {
    const uint64_t begin = layout.my_begin(b);
    float* slice = master_.data() + layout.bucket(b).offset;
    layout.for_each_piece(b, begin, layout.bucket(b).slice,
                          [&](const BucketSlot& slot, uint64_t param_offset, uint64_t flat,
                              uint64_t n) {
                            const ParamRecord& p = params[slot.param_index];
                            caster.convert(element_at(p.data, dtype, param_offset), dtype,
                                           slice + (flat - begin), STRATA_F32, n);
                          });
  }
  for (const OwnedRange& r : ranges_) add_shard(r, master_.data() + r.partition_offset);
}

void MasterPartition::add_shard(const OwnedRange& r, float* master) {
  strata_shard shard{};
  shard.struct_size = sizeof(shard);
  shard.param_index = r.param_index;
  shard.offset = r.param_offset;
  shard.count = r.count;
  shard.master = master;
  shards_.push_back(shard);
}

size_t MasterPartition::request_model_copies(
    const std::vector<ParamRecord>& params,
    const std::function<void*(size_t bucket)>& partition_slice) {
  if (dtype_ == STRATA_F32) return 0;  // the masters are the model's values already
  for (size_t i = 0; i < shards_.size(); ++i) {
    const OwnedRange& r = ranges_[i];
    const size_t b = layout_->plan().bucket_of[r.param_index];
    const BucketPartition& part = layout_->bucket(b);
    shards_[i].model =
        part.partitioned && partition_slice
            ? element_at(partition_slice(b), dtype_, r.partition_offset - part.offset)
            : element_at(params[r.param_index].data, dtype_, r.param_offset);
    shards_[i].model_dtype = dtype_;
  }
  return shards_.size();
}

const std::vector<strata_shard>& MasterPartition::shards_with_grads(float* grads) {
  for (size_t i = 0; i < shards_.size(); ++i) shards_[i].grad = grads + ranges_[i].partition_offset;
  return shards_;
}

}  // namespace strata::zero
