// What ZeRO stages 1-3 share, written once, so that each stage's file holds only what differs.
//
// PartitionedStage (stages 1-3): the fp32 masters and the optimizer state are partitioned over
// the ranks by a PartitionLayout of reduce buckets, and after the step every rank's whole
// parameters are allgathered back (publish). It holds the members every such stage has, and the
// steps they share: taking the parameters at finalize, making the reducer, the plan's log lines,
// the allgather publish, and settling the reductions before zero_grad.
//
// GradPartitionStage (stages 2-3): gradients are partitioned too (GradPartition), reduced as
// buckets complete in every micro-batch, with gather/release agreed on between the ranks
// (GroupCalls). It implements grad_ready, finish_reduce and param_view's gradient, and the
// micro-batch's end that both stages share.
//
// Stage 0 keeps everything whole and shares none of this.
#pragma once

#include "comm_link.hpp"
#include "dtype_cast.hpp"
#include "grad_partition.hpp"
#include "group_calls.hpp"
#include "group_state.hpp"
#include "master_partition.hpp"
#include "partition_layout.hpp"
#include "partition_reducer.hpp"
#include "publisher.hpp"
#include "stage.hpp"

#include <memory>

namespace strata::zero {

class PartitionedStage : public Stage {
 public:
  int number() const final { return stage_; }
  bool shards_replicated() const final { return false; }
  // The step updated the masters: every rank's whole parameters get their new values.
  void publish() override {
    publish_whole([] {}, [] {});
  }

 protected:
  PartitionedStage(const ZeroConfig& config, const sdk::Host& host, int stage)
      : stage_(stage), host_(host), tracer_(host), config_(config), comm_(host, stage),
        caster_(host) {}

  // finalize's first step: the parameters and groups, and the model dtype every rank agrees on.
  void take_params(const std::vector<ParamRecord>& params, const std::vector<GroupRecord>& groups);
  // The reducer over layout_, delivering into `grads` (call once layout_ and grads exist).
  void make_reducer(ReduceTarget& grads);
  // The create-time lines: the partition plan and how many model copies the step writes.
  void log_plan(size_t model_copies) const;
  // Allgathers every rank's updated slices back into the whole parameters' `data`, between
  // `before` and `after` (stage 3: drop stale gathers, then page the partitions out), all inside
  // one "publish" span on the timeline.
  template <class Before, class After>
  void publish_whole(Before&& before, After&& after);
  // Before zero_grad: the engine always completes the micro-batch first. If a caller did not,
  // complete what started so that no collective is left dangling and no late result lands in
  // memory about to be zeroed or freed.
  void settle_reductions();
  // grad_ready's bookkeeping: fails naming the parameter if it was reported twice.
  void mark_ready(uint32_t index, const char* twice);

  const int stage_;
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
  // In flight until a round finishes: its destructor waits for the collectives, which write into
  // the stage's gradient target. A derived stage that holds the target destroys the reducer first
  // (its destructor resets it), since a base's members outlive the derived ones.
  std::unique_ptr<PartitionReducer> reducer_;
};

class GradPartitionStage : public PartitionedStage {
 public:
  // The group calls and the reducer go before the gradient partition they write into.
  ~GradPartitionStage() override {
    calls_.reset();
    reducer_.reset();
  }
  void grad_ready(uint32_t index, bool boundary) final;
  void finish_reduce() final;
  const std::vector<strata_shard>& owned_shards() override;
  void param_view(uint32_t index, void** data, void** grad) const override;

 protected:
  using PartitionedStage::PartitionedStage;

  // The gradient partition, the reducer and the agreed group calls, once layout_ and masters_
  // exist. `transient_only`: the partition exists only from a step's first reduction to zero_grad.
  void make_grads(bool transient_only = false);
  // The end of a micro-batch after the stage's own part: parameters never finished contribute
  // what their buffers hold (lent but never written: 0), and the spare buffers are freed.
  void finish_micro_batch(bool boundary);
  // zero_grad's shared part.
  void zero_grads();

  GradPartition grads_;
  std::unique_ptr<GroupCalls> calls_;
  bool boundary_reduced_ = false;  // end_micro_step(boundary) ran since the last finish_reduce
};

template <class Before, class After>
void PartitionedStage::publish_whole(Before&& before, After&& after) {
  const int64_t begin = tracer_.now();
  before();
  const uint64_t bytes = publish_by_allgather(
      host_, comm_, layout_, params_, dtype_,
      allgather_piece(config_.allgather_bucket_size, comm_.size()), masters_.data());
  after();
  tracer_.span("publish", begin, -1, bytes);
}

}  // namespace strata::zero
