#include "stage3.hpp"

namespace strata::zero {

// Key = 2 * (group + 1) + persistent: buckets never mix groups, nor whole with partitioned.
uint64_t Stage3::bucket_key(uint32_t param) const {
  const uint32_t g = groups_.group_of(param);
  const bool persistent =
      g == kNoGroup || params_[param].count <= config_.param_persistence_threshold;
  const uint64_t group_key = g == kNoGroup ? 0 : uint64_t{g} + 1;
  return 2 * group_key + (persistent ? 1 : 0);
}

void Stage3::on_finalized() {
  Stage2::on_finalized();
  gatherer_ = std::make_unique<ParamGatherer>(host_, comm_, layout_, params_, groups_, dtype_,
                                              config_);
  gatherer_->fill_from_params();
  lend_model_copies([this](size_t b) { return gatherer_->slice(b); });
}

void Stage3::publish_partitioned(size_t b) {
  caster_.convert(master_.data() + layout_.bucket(b).offset, STRATA_F32, gatherer_->slice(b),
                  dtype_, layout_.bucket(b).slice);
}

void Stage3::param_view(uint32_t index, void** data, void** grad) const {
  Stage2::param_view(index, data, grad);
  if (gatherer_->partitioned(index)) *data = gatherer_->data(index);
}

}  // namespace strata::zero
