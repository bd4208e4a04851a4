#include "sharded_stage.hpp"

#include "agreement.hpp"
#include "publisher.hpp"

#include <string>

namespace strata::zero {

using sdk::fail;

ShardedStage::ShardedStage(const ZeroConfig& config, const sdk::Host& host, int stage)
    : host_(host), config_(config), comm_(host, stage), caster_(host), stage_(stage) {}

void ShardedStage::check_param(const ParamRecord& param) const {
  const std::string who = "parameter " + param.name + ": sharding stage " + std::to_string(stage_);
  check_model_dtype(param.dtype, who);
  if (param.device.type != STRATA_DEVICE_HOST) {
    fail(STRATA_ERR_UNSUPPORTED, who + " supports host memory only");
  }
  if (param.count > 0 && param.data == nullptr) {
    fail(STRATA_ERR_INVALID_ARGUMENT, who + ": data must be set for a non-empty parameter");
  }
}

uint64_t ShardedStage::bucket_key(uint32_t param) const {
  const uint32_t g = groups_.group_of(param);
  return g == kNoGroup ? 0 : uint64_t{g} + 1;
}

void ShardedStage::choose_dtype() {
  if (params_.empty()) return;
  dtype_ = common_dtype(params_, stage_);
  caster_.require(dtype_, "the model dtype of parameter " + params_.front().name);
  if (!comm_.can_move(dtype_)) {
    fail(STRATA_ERR_UNSUPPORTED, std::string("the comm stratum cannot allgather ") +
                                     sdk::dtype_name(dtype_) + ", the model dtype");
  }
}

void ShardedStage::finalize(const std::vector<ParamRecord>& params,
                            const std::vector<GroupRecord>& groups) {
  params_ = params;
  groups_ = GroupState(groups, params.size());
  choose_dtype();
  prepare(params_);
  std::vector<uint64_t> counts, keys;
  for (uint32_t i = 0; i < params_.size(); ++i) {
    counts.push_back(params_[i].count);
    keys.push_back(bucket_key(i));
  }
  BucketPlan plan = plan_buckets(counts, config_.reduce_bucket_size, keys);
  std::vector<bool> partitioned;
  for (const Bucket& b : plan.buckets) partitioned.push_back(partitioned_key(b.key));
  layout_ = PartitionLayout(std::move(plan), comm_.size(), comm_.rank(), partitioned);
  check_ranks_agree(comm_, params_, groups, layout_.plan(), persistent_params());

  master_ = sdk::HostArray<float>(host_, layout_.partition_elements(), STRATA_MEM_MASTER);
  fill_masters();
  ranges_ = layout_.owned_ranges();
  shards_.clear();
  for (const OwnedRange& r : ranges_) {
    strata_shard shard{};
    shard.struct_size = sizeof(shard);
    shard.param_index = r.param_index;
    shard.offset = r.param_offset;
    shard.count = r.count;
    shard.master = master_.data() + r.partition_offset;
    shards_.push_back(shard);
  }
  on_finalized();
  log_plan();
}

// The runtime broadcast rank 0's values into every rank's `data` before finalize.
void ShardedStage::fill_masters() {
  for (size_t b = 0; b < layout_.buckets().size(); ++b) {
    const uint64_t begin = layout_.my_begin(b);
    float* slice = master_.data() + layout_.bucket(b).offset;
    layout_.for_each_piece(b, begin, layout_.bucket(b).slice,
                           [&](const BucketSlot& slot, uint64_t param_offset, uint64_t flat,
                               uint64_t n) {
                             const ParamRecord& p = params_[slot.param_index];
                             caster_.convert(element_at(p.data, dtype_, param_offset), dtype_,
                                             slice + (flat - begin), STRATA_F32, n);
                           });
  }
}

const std::vector<strata_shard>& ShardedStage::owned_shards() {
  float* grads = fp32_grads();
  for (size_t i = 0; i < shards_.size(); ++i) shards_[i].grad = grads + ranges_[i].partition_offset;
  return shards_;
}

void ShardedStage::publish() {
  publish_by_allgather(host_, comm_, caster_, layout_, params_, dtype_,
                       allgather_piece(config_.allgather_bucket_size, comm_.size()),
                       master_.data());
  if (model_copies_lent_) return;  // the step wrote the partitioned slices already
  for (size_t b = 0; b < layout_.buckets().size(); ++b) {
    if (layout_.bucket(b).partitioned) publish_partitioned(b);
  }
}

void ShardedStage::lend_model_copies(const std::function<void*(size_t bucket)>& slice_of) {
  if (dtype_ == STRATA_F32 || host_.raw()->abi_minor < 2) return;  // older runtimes ignore it
  const size_t esize = sdk::dtype_size(dtype_);
  const auto& buckets = layout_.buckets();
  size_t lent = 0;
  for (size_t i = 0; i < ranges_.size(); ++i) {
    const uint64_t at = ranges_[i].partition_offset;
    for (size_t b = 0; b < buckets.size(); ++b) {
      const BucketPartition& part = buckets[b];
      if (at < part.offset || at >= part.offset + part.slice) continue;
      if (part.partitioned) {
        shards_[i].model = static_cast<unsigned char*>(slice_of(b)) + (at - part.offset) * esize;
        shards_[i].model_dtype = dtype_;
        ++lent;
      }
      break;
    }
  }
  model_copies_lent_ = true;
  host_.log(STRATA_LOG_INFO,
            "zero stage %d: the step writes the %s copies of %zu partitioned shards; publish "
            "rounds none of them",
            stage_, sdk::dtype_name(dtype_), lent);
}

size_t ShardedStage::persistent_params() const {
  size_t persistent = 0;
  for (size_t b = 0; b < layout_.buckets().size(); ++b) {
    if (!layout_.bucket(b).partitioned) persistent += layout_.plan().buckets[b].slots.size();
  }
  return persistent;
}

void ShardedStage::log_plan() const {
  uint64_t elements = 0;
  for (const BucketPartition& b : layout_.buckets()) elements += b.count;
  const uint64_t padded = layout_.partition_elements() * static_cast<uint64_t>(comm_.size());
  host_.log(STRATA_LOG_INFO,
            "zero stage %d: %zu bucket%s (reduce_bucket_size %llu elements), %llu gradient "
            "elements in %zu params, %llu elements per rank partition (%llu of padding over all "
            "ranks), %zu persistent params, %s %s",
            stage_, layout_.buckets().size(), layout_.buckets().size() == 1 ? "" : "s",
            static_cast<unsigned long long>(config_.reduce_bucket_size),
            static_cast<unsigned long long>(elements), params_.size(),
            static_cast<unsigned long long>(layout_.partition_elements()),
            static_cast<unsigned long long>(padded - elements), persistent_params(),
            sdk::dtype_name(dtype_), config_.overlap_comm ? "overlapped" : "blocking");
}

}  // namespace strata::zero
