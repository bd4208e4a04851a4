// offload_optimizer.device cpu with shards in CUDA device memory (ABI 1.7), as ZeRO-Offload
// does it: the fp32 optimizer state stays in host memory and the CPU kernels step it, piece by
// piece, in pinned staging buffers: piece k+1's masters and gradients come down while piece k is
// stepped and piece k-1's updated masters (and model copies) go up (piece_plan.hpp has the
// order). The masters travel both ways, so the device's masters stay the truth (publish and
// checkpoints read them there).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <strata/plugin.hpp>
#include <vector>

#include "device_ops.hpp"
#include "piece_plan.hpp"
#include "state_store.hpp"

namespace strata::offload {

class StagedPipeline {
 public:
  // Plans the pieces of these shards (at most piece_elements each) and allocates `buffers`
  // staging buffers (pinned host memory when the host can lock it, else pageable with a warning):
  // masters and gradients, plus model copies when `model_copies`.
  StagedPipeline(const sdk::Host& host, std::span<const strata_shard> shards,
                 uint64_t piece_elements, size_t buffers, bool model_copies);
  ~StagedPipeline();
  StagedPipeline(const StagedPipeline&) = delete;
  StagedPipeline& operator=(const StagedPipeline&) = delete;

  // The runs of every piece, in order: the state store keeps one contiguous run of state per run
  // (its "shards"), so a piece's state is whole runs.
  std::vector<uint64_t> run_counts() const;

  // One step: `step(host_shards, slices)` is called once per piece with shards that point into
  // the staging buffer (master, grad and model on the host, slice begin 0) and the runs' state
  // (`run_state[j]` for run j). Blocks until every upload has finished.
  using PieceStep =
      std::function<void(std::span<const strata_shard>, std::span<const StateSlice>)>;
  void step(std::span<const strata_shard> shards, std::span<float* const> run_state,
            const PieceStep& step);

  // Calls f(run, first_in_run, count, offset) for the runs covering elements [first, first +
  // count) of shard `shard`, offset counting from `first` (checkpoint ranges).
  void for_each_run(size_t shard, uint64_t first, uint64_t count,
                    const std::function<void(size_t, uint64_t, uint64_t, uint64_t)>& f) const;

  std::string describe() const;

 private:
  struct Staging {
    float* master = nullptr;
    float* grad = nullptr;
    uint16_t* model = nullptr;
  };
  void download(std::span<const strata_shard> shards, size_t piece, size_t buffer);
  void upload(std::span<const strata_shard> shards, size_t piece, size_t buffer);
  float* alloc_floats(uint64_t count);

  sdk::Host host_;
  std::vector<Piece> pieces_;
  std::vector<size_t> first_run_;  // per piece: the index of its first run
  std::vector<Staging> staging_;
  std::vector<void*> allocations_;
  bool pinned_ = true;
  uint64_t staged_bytes_ = 0;
  std::unique_ptr<device::CopyPipe> pipe_;
};

}  // namespace strata::offload
