// ZeRO stage 2: gradients are partitioned too. Every micro-batch, as buckets complete (grad_ready,
// or the release of a group gathered for backward), they are reduce-scattered into each rank's
// persistent gradient partition (model dtype, grad_partition.hpp), which accumulates over the
// micro-batches; lent and host gradient buffers are emptied as they are read, so no rank keeps
// whole gradients past a bucket in flight. end_micro_step completes the micro-batch's reductions.
//
// gather/release are collective here (release starts reductions): each one is agreed on first
// (group_calls.hpp), and when groups exist buckets start only at those agreed points.
#pragma once

#include "comm_link.hpp"
#include "dtype_cast.hpp"
#include "grad_partition.hpp"
#include "group_calls.hpp"
#include "group_state.hpp"
#include "master_partition.hpp"
#include "partition_layout.hpp"
#include "partition_reducer.hpp"
#include "stage.hpp"

#include <memory>

namespace strata::zero {

class Stage2 final : public Stage {
 public:
  Stage2(const ZeroConfig& config, const sdk::Host& host)
      : host_(host), tracer_(host), config_(config), comm_(host, 2), caster_(host) {}

  int number() const override { return 2; }
  bool shards_replicated() const override { return false; }
  void check_param(const ParamRecord& param) const override { check_host_param(param, 2); }
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
  bool boundary_reduced_ = false;  // end_micro_step(boundary) ran since the last finish_reduce
};

}  // namespace strata::zero
