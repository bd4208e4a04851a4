// ZeRO stage 3: parameters are partitioned as well. A parameter in a group with more than
// stage3_param_persistence_threshold elements lives only as each rank's slice (the parameter
// partition, param_gatherer.hpp); the host reads it between gather and release of its group,
// through param_view (data is NULL otherwise). Parameters at or under the threshold, and those in
// no group, persist whole in the host's `data` and are published by allgather as at stages 1-2.
// Gradients work as at stage 2; gather, release and end_micro_step add the parameters' movement.
//
// offload_param (param_store.hpp): the partitions live in the offload stratum's store. On a drive
// the masters (and an f16/bf16 model's parameter partition) are paged: owned_shards reads them in
// for the step (or a checkpoint), publish writes them back and frees them, and zero_grad, a
// gather or the end of a micro-batch with them still resident (after init_state or a checkpoint
// save, which only read them) writes them back too. The gradient partition is transient (from the
// step's first reduction to zero_grad), so between steps a rank holds no partition in memory,
// only the groups in use.
//
// Deferred values (ABI 1.9): a parameter may be registered without data: a partitioned one's
// slices start at zero, one kept whole gets a zeroed buffer here (its `data` from then on). A
// gather FOR_WRITE followed by release stores whatever the host wrote into the gathered buffers
// (and into whole parameters' `data`) as the parameters' values: parameter partition, masters,
// store. A host then builds and writes one group at a time.
//
// What stages 2 and 3 share is GradPartitionStage's (partitioned_stage.hpp); this file holds the
// parameters' partition and movement.
#pragma once

#include "device_memory.hpp"
#include "param_gatherer.hpp"
#include "param_store.hpp"
#include "partitioned_stage.hpp"

#include <memory>

namespace strata::zero {

class Stage3 final : public GradPartitionStage {
 public:
  Stage3(const ZeroConfig& config, const sdk::Host& host) : GradPartitionStage(config, host, 3) {}

  void check_param(const ParamRecord& param) const override {
    check_host_param(param, 3, /*deferred_ok=*/true);
  }
  void finalize(const std::vector<ParamRecord>& params,
                const std::vector<GroupRecord>& groups) override;
  void gather(uint32_t group, uint32_t flags) override;
  void release(uint32_t group) override;
  void end_micro_step(bool boundary) override;
  const std::vector<strata_shard>& owned_shards() override;
  const std::vector<strata_shard>& shard_ranges() override;
  void publish() override;
  void zero_grad() override;
  void param_view(uint32_t index, void** data, void** grad) const override;

 private:
  void open_store();  // offload_param: the store, and where the masters are in it
  void page_in();   // on a drive: the masters and staged partition resident, shards at them
  void page_out();  // on a drive: both written back and freed
  // Parameters registered without data (ABI 1.9) that this stage keeps whole get a buffer here.
  void hold_deferred_whole();
  // A FOR_WRITE gather's release: the gathered values (whole parameters: their `data`) become
  // this rank's slices of the parameter partition and the fp32 masters.
  void write_back(uint32_t group);

  // The masters (the base's) point into the store but only hold the pointer: they free nothing of
  // it and read nothing when destroyed, after it. The gatherer reads both and goes first.
  ParamStore store_;
  uint64_t masters_at_ = 0;  // byte offset of the masters in the store
  std::unique_ptr<ParamGatherer> gatherer_;
  std::vector<uint8_t> writing_;   // per group: gathered FOR_WRITE, written back at release
  bool in_backward_ = false;       // a gather FOR_BACKWARD happened in this micro-batch
  std::vector<Buffer<unsigned char>> deferred_whole_;  // whole parameters registered without data
};

}  // namespace strata::zero
