// ZeRO stage 1: the fp32 master copy and the optimizer state are partitioned. Whole gradients
// stay with every rank across micro-batches (host buffers, or ours where the host gave none) and
// are reduce-scattered only at the accumulation boundary, into a transient fp32 gradient
// partition (transient_grads.hpp). After the step, publish allgathers the updated parameters
// back into every rank's `data`.
#pragma once

#include "comm_link.hpp"
#include "dtype_cast.hpp"
#include "full_grads.hpp"
#include "group_state.hpp"
#include "master_partition.hpp"
#include "partition_layout.hpp"
#include "partition_reducer.hpp"
#include "stage.hpp"
#include "transient_grads.hpp"

#include <memory>

namespace strata::zero {

class Stage1 final : public Stage {
 public:
  Stage1(const ZeroConfig& config, const sdk::Host& host)
      : host_(host), tracer_(host), config_(config), comm_(host, 1), caster_(host) {}

  int number() const override { return 1; }
  bool shards_replicated() const override { return false; }
  void check_param(const ParamRecord& param) const override { check_host_param(param, 1); }
  void finalize(const std::vector<ParamRecord>& params,
                const std::vector<GroupRecord>& groups) override;
  void grad_ready(uint32_t index, bool boundary) override;
  void end_micro_step(bool boundary) override;
  void finish_reduce() override;
  const std::vector<strata_shard>& owned_shards() override;
  void publish() override;
  void zero_grad() override;
  void gather(uint32_t group, uint32_t flags) override;
  void release(uint32_t group) override;
  void param_view(uint32_t index, void** data, void** grad) const override;

 private:
  sdk::Host host_;
  sdk::Tracer tracer_;
  ZeroConfig config_;
  CommLink comm_;
  Caster caster_;
  std::vector<ParamRecord> params_;  // grad filled in where the host gave none
  GroupState groups_;
  int32_t dtype_ = STRATA_F32;
  FullGrads full_grads_;
  PartitionLayout layout_;
  MasterPartition masters_;
  TransientGrads grads_;
  std::unique_ptr<PartitionReducer> reducer_;  // after what it reads and writes
};

}  // namespace strata::zero
