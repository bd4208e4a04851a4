#include "stage0.hpp"

#include "agreement.hpp"

#include <string>

namespace strata::zero {

using sdk::fail;

Stage0::Stage0(const ZeroConfig& config, const sdk::Host& host)
    : host_(host), comm_(host, 0), bucket_capacity_(config.reduce_bucket_size) {}

void Stage0::check_param(const ParamRecord& param) const {
  // fp16/bf16 models need fp32 master copies, which arrive with the precision work later.
  if (param.dtype != STRATA_F32) {
    fail(STRATA_ERR_UNSUPPORTED, "parameter " + param.name + ": sharding stage 0 supports f32 " +
                                     "parameters only, got " + sdk::dtype_name(param.dtype));
  }
  if (param.device.type != STRATA_DEVICE_HOST) {
    fail(STRATA_ERR_UNSUPPORTED,
         "parameter " + param.name + ": sharding stage 0 supports host memory only");
  }
  if (param.count > 0 && param.data == nullptr) {
    fail(STRATA_ERR_INVALID_ARGUMENT,
         "parameter " + param.name + ": data must be set for a non-empty parameter");
  }
}

void Stage0::finalize(const std::vector<ParamRecord>& params,
                      const std::vector<GroupRecord>& groups) {
  params_ = params;
  groups_ = GroupState(groups, params.size());
  std::vector<uint64_t> counts;
  counts.reserve(params_.size());
  for (const ParamRecord& p : params_) counts.push_back(p.count);
  BucketPlan plan = plan_buckets(counts, bucket_capacity_);
  check_ranks_agree(comm_, params_, groups, plan, 0);
  log_plan(plan);
  // Parameters registered without a gradient buffer (ABI 1.1) get a whole one of ours.
  full_grads_ = FullGrads(host_, params_);

  shards_.clear();
  for (size_t i = 0; i < params_.size(); ++i) {
    strata_shard shard{};
    shard.struct_size = sizeof(shard);
    shard.param_index = static_cast<uint32_t>(i);
    shard.offset = 0;
    shard.count = params_[i].count;
    // fp32 host model: the parameter itself is the master copy, the host grad is the grad.
    shard.master = static_cast<float*>(params_[i].data);
    shard.grad = static_cast<float*>(params_[i].grad);
    shards_.push_back(shard);
  }
  reducer_ = std::make_unique<Stage0Reducer>(host_, comm_, params_, std::move(plan));
}

void Stage0::log_plan(const BucketPlan& plan) const {
  uint64_t elements = 0;
  size_t in_place = 0;
  for (const Bucket& b : plan.buckets) {
    elements += b.count;
    in_place += b.in_place ? 1 : 0;
  }
  host_.log(STRATA_LOG_INFO,
            "zero stage 0: %zu bucket%s (reduce_bucket_size %llu elements, %zu reduced in place), "
            "%llu gradient elements in %zu params, %.1f MiB of fusion buffers",
            plan.buckets.size(), plan.buckets.size() == 1 ? "" : "s",
            static_cast<unsigned long long>(bucket_capacity_), in_place,
            static_cast<unsigned long long>(elements), params_.size(),
            static_cast<double>(plan.fused_elements) * sizeof(float) / (1024.0 * 1024.0));
}

void Stage0::grad_ready(uint32_t index, bool boundary) {
  // Before the boundary the host keeps accumulating into its own grad buffers: nothing to do.
  if (!boundary) return;
  reducer_->mark_ready(index);
}

void Stage0::finish_reduce() { reducer_->finish(); }

void Stage0::publish() {
  // Nothing to do: at stage 0 with an fp32 model the optimizer stepped the host's parameters
  // themselves (each shard's master IS the parameter), and every rank stepped all of them.
}

void Stage0::zero_grad() {
  // The engine always calls finish_reduce first. If a caller did not, complete what started so
  // that no collective is left dangling and no late result lands in the zeroed buffers.
  if (reducer_->in_flight()) {
    reducer_->finish();
  } else {
    reducer_->reset_step();
  }
  FullGrads::zero(params_);
}

void Stage0::param_view(uint32_t index, void** data, void** grad) const {
  *data = params_[index].data;
  *grad = params_[index].grad;
}

}  // namespace strata::zero
