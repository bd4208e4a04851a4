// ZeRO stage 3: parameters are partitioned as well. A parameter in a group with more than
// stage3_param_persistence_threshold elements lives only as each rank's slice (the parameter
// partition, param_gatherer.hpp); the host reads it between gather and release of its group,
// through param_view (data is NULL otherwise). Parameters at or under the threshold, and those in
// no group, persist whole in the host's `data` and are published by allgather as at stages 1-2.
// Gradients work as at stage 2; gather, release and end_micro_step add the parameters' movement.
#pragma once

#include "comm_link.hpp"
#include "dtype_cast.hpp"
#include "grad_partition.hpp"
#include "group_calls.hpp"
#include "group_state.hpp"
#include "master_partition.hpp"
#include "param_gatherer.hpp"
#include "partition_layout.hpp"
#include "partition_reducer.hpp"
#include "stage.hpp"

#include <memory>

namespace strata::zero {

class Stage3 final : public Stage {
 public:
  Stage3(const ZeroConfig& config, const sdk::Host& host)
      : host_(host), tracer_(host), config_(config), comm_(host, 3), caster_(host) {}

  int number() const override { return 3; }
  bool shards_replicated() const override { return false; }
  void check_param(const ParamRecord& param) const override { check_host_param(param, 3); }
  void finalize(const std::vector<ParamRecord>& params,
                const std::vector<GroupRecord>& groups) override;
  void grad_ready(uint32_t index, bool boundary) override;
  void gather(uint32_t group, uint32_t flags) override;
  void release(uint32_t group) override;
  void end_micro_step(bool boundary) override;
  void finish_reduce() override;
  const std::vector<strata_shard>& owned_shards() override;
  void publish() override;
  void zero_grad() override;
  void param_view(uint32_t index, void** data, void** grad) const override;

 private:
  sdk::Host host_;
  sdk::Tracer tracer_;
  ZeroConfig config_;
  CommLink comm_;
  Caster caster_;
  std::vector<ParamRecord> params_;
  GroupState groups_;
  int32_t dtype_ = STRATA_F32;
  PartitionLayout layout_;
  MasterPartition masters_;
  GradPartition grads_;
  std::unique_ptr<PartitionReducer> reducer_;  // after what it reads and writes
  std::unique_ptr<GroupCalls> calls_;
  std::unique_ptr<ParamGatherer> gatherer_;
  bool boundary_reduced_ = false;  // end_micro_step(boundary) ran since the last finish_reduce
};

}  // namespace strata::zero
