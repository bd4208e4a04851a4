// ZeRO stage 3: parameters are partitioned as well. A parameter in a group with more than
// stage3_param_persistence_threshold elements lives only as each rank's slice; the host reads it
// between gather and release of its group, through param_view (data is NULL otherwise).
// Parameters at or under the threshold, and those in no group, persist whole in the host's
// `data` and are published by allgather as at stages 1-2. Gradients work as at stage 2.
#pragma once

#include "param_gatherer.hpp"
#include "stage2.hpp"

#include <memory>

namespace strata::zero {

class Stage3 final : public Stage2 {
 public:
  Stage3(const ZeroConfig& config, const sdk::Host& host) : Stage2(config, host, 3) {}

  void param_view(uint32_t index, void** data, void** grad) const override;

 private:
  uint64_t bucket_key(uint32_t param) const override;
  bool partitioned_key(uint64_t key) const override { return (key & 1) == 0; }
  void on_finalized() override;
  void publish_partitioned(size_t bucket) override;
  void gathered(uint32_t group) override { gatherer_->gather(group); }
  void released(uint32_t group) override { gatherer_->release(group); }
  void micro_batch_ended(bool boundary) override { gatherer_->end_micro_batch(boundary); }

  std::unique_ptr<ParamGatherer> gatherer_;
};

}  // namespace strata::zero
