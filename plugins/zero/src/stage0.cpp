#include "stage0.hpp"

#include "agreement.hpp"

#include <string>

namespace strata::zero {

using sdk::fail;

Stage0::Stage0(const ZeroConfig& config, const sdk::Host& host)
    : host_(host), tracer_(host), comm_(host, 0), caster_(host),
      bucket_capacity_(config.reduce_bucket_size), comm_dtype_(config.communication_dtype) {}

void Stage0::finalize(const std::vector<ParamRecord>& params,
                      const std::vector<GroupRecord>& groups) {
  params_ = params;
  groups_ = GroupState(groups, params.size());
  dtype_ = common_dtype(params_, 0);
  if (!params_.empty()) caster_.require(dtype_, "the model dtype of parameter " + params_[0].name);
  std::vector<uint64_t> counts;
  counts.reserve(params_.size());
  for (const ParamRecord& p : params_) counts.push_back(p.count);
  plan_ = plan_buckets(counts, bucket_capacity_);
  check_ranks_agree(comm_, params_, groups, plan_, 0);
  // Parameters registered without a gradient buffer (ABI 1.1) get a whole one of ours, laid out
  // as their bucket when the whole bucket is ours (then reduced without copies).
  full_grads_ = FullGrads(host_, params_, dtype_ == STRATA_F32 ? &plan_ : nullptr);

  BucketBuffers* buffers = nullptr;
  if (dtype_ == STRATA_F32) {
    fp32_buckets_ = std::make_unique<Fp32Buckets>(host_, params_, plan_, full_grads_);
    buffers = fp32_buckets_.get();
  } else {
    copies_ = std::make_unique<Fp32Copies>(host_, caster_, params_, plan_, dtype_);
    buffers = copies_.get();
  }
  shards_.clear();
  for (uint32_t i = 0; i < params_.size(); ++i) {
    strata_shard shard{};
    shard.struct_size = sizeof(shard);
    shard.param_index = i;
    shard.offset = 0;
    shard.count = params_[i].count;
    // fp32 model: the parameter itself is the master copy, the host grad is the grad. Otherwise
    // the grads are set by owned_shards (the fp32 gradient copy comes and goes), and the step
    // writes the rounded master straight into the parameter: its model copy.
    shard.master = copies_ ? copies_->master_of(i) : static_cast<float*>(params_[i].data);
    shard.grad = copies_ ? nullptr : static_cast<float*>(params_[i].grad);
    if (copies_) {
      shard.model = params_[i].data;
      shard.model_dtype = dtype_;
    }
    shards_.push_back(shard);
  }
  reducer_ = std::make_unique<Stage0Reducer>(comm_, params_, plan_, *buffers, tracer_, host_,
                                             comm_dtype_);
  log_plan();
  if (copies_) {
    host_.log(STRATA_LOG_INFO,
              "zero stage 0: the step writes the %s parameters from the fp32 masters (model "
              "copies); publish moves nothing",
              sdk::dtype_name(dtype_));
  }
}

void Stage0::log_plan() const {
  uint64_t elements = 0;
  for (const Bucket& b : plan_.buckets) elements += b.count;
  const size_t in_place = copies_ ? plan_.buckets.size() : fp32_buckets_->reduced_where_they_lie();
  const uint64_t fused = copies_ ? 0 : fp32_buckets_->fused_elements();
  const std::string masters =
      copies_ ? std::string(", ") + sdk::dtype_name(dtype_) +
                    " model: fp32 masters, gradients averaged in fp32 in place"
              : "";
  host_.log(STRATA_LOG_INFO,
            "zero stage 0: %zu bucket%s (reduce_bucket_size %llu elements, %zu reduced in place), "
            "%llu gradient elements in %zu params, %.1f MiB of fusion buffers%s",
            plan_.buckets.size(), plan_.buckets.size() == 1 ? "" : "s",
            static_cast<unsigned long long>(bucket_capacity_), in_place,
            static_cast<unsigned long long>(elements), params_.size(),
            static_cast<double>(fused) * sizeof(float) / (1024.0 * 1024.0), masters.c_str());
}

void Stage0::grad_ready(uint32_t index, bool boundary) {
  // Before the boundary the host keeps accumulating into its own grad buffers: nothing to do.
  if (!boundary) return;
  reducer_->mark_ready(index);
}

// Stage 0 moves nothing on gather and release: they only check the call order, locally.
void Stage0::gather(uint32_t group, uint32_t flags) { groups_.begin_gather(group, flags); }
void Stage0::release(uint32_t group) { groups_.end_gather(group); }
void Stage0::end_micro_step(bool /*boundary*/) { groups_.expect_none_gathered(); }

void Stage0::finish_reduce() { reducer_->finish(); }

const std::vector<strata_shard>& Stage0::owned_shards() {
  // The optimizer needs both pointers even before the first reduction (its init_state), so the
  // fp32 gradient copy of a half model is created here if no bucket did yet.
  if (copies_) {
    for (strata_shard& shard : shards_) shard.grad = copies_->grad_of(shard.param_index);
  }
  return shards_;
}

void Stage0::publish() {
  // Every rank stepped every master, and the step already put them where the model reads them:
  // fp32 models step the parameters themselves; half models' shards ask for their model copies
  // in the parameters. No communication, nothing to round.
}

void Stage0::zero_grad() {
  // The engine always calls finish_reduce first. If a caller did not, complete what started so
  // that no collective is left dangling and no late result lands in the zeroed buffers.
  if (reducer_->in_flight()) {
    reducer_->finish();
  } else {
    reducer_->reset_step();
  }
  FullGrads::zero(params_, Memory(host_));
  if (copies_) {
    copies_->drop_grads();
    for (strata_shard& shard : shards_) shard.grad = nullptr;
  }
}

void Stage0::param_view(uint32_t index, void** data, void** grad) const {
  *data = params_[index].data;
  *grad = params_[index].grad;
}

}  // namespace strata::zero
