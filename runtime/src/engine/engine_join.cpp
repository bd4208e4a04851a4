// Uneven data (API 1.12; the manifest's "join": true): strata_join for a rank with no more
// micro-batches, as Horovod's hvd.join() and PyTorch's Join context.
//
// Every micro-batch opens, at the first runtime call that may take part in a collective, with a
// one-number allreduce of how many ranks still contribute (a joined rank adds 0). So every rank
// knows, before any of the micro-batch's collectives, whether the others go on: a joined rank then
// replays the runtime calls of its own last micro-batch (gathers, releases, grad_ready and the
// host's collectives: the calls whose collectives the others make), adds nothing, and steps; when the
// count is 0 every rank has joined and strata_join returns on all of them together.
//
// Averages: the sharding stratum averages over world size, and the host divides its loss by the
// accumulation steps; at the boundary the engine multiplies the gradients by world size x
// accumulation over the micro-batches actually contributed in the window, so the update is the
// mean over the micro-batches that were run (Horovod: the sum over the ranks that did not join,
// divided by their number).
#include "engine/engine.hpp"
#include "engine/engine_calls.hpp"
#include "log.hpp"

#include <string>

namespace strata::rt {

void Engine::open_micro_batch() {
  if (!join_tracking() || micro_batch_open_) return;
  const int64_t mine = joined_ ? 0 : 1;
  int64_t contributing = 0;
  collectives_->allreduce(&mine, &contributing, 1, STRATA_I64, STRATA_SUM);
  contributing_ranks_ = static_cast<uint64_t>(contributing);
  window_contributions_ += contributing;
  micro_batch_open_ = true;
}

void Engine::record_call(const RecordedCall& call) {
  if (manifest_.join && !joined_) calls_.push_back(call);
}

void Engine::close_micro_batch() {
  micro_batch_open_ = false;
  if (!manifest_.join || joined_) return;
  last_calls_.swap(calls_);
  calls_.clear();
  ran_micro_batch_ = true;
}

double Engine::contribution_factor() const {
  if (!manifest_.join || window_contributions_ == 0) return 1.0;
  const double full = static_cast<double>(world_.size) *
                      static_cast<double>(batch_.gradient_accumulation_steps);
  return full / static_cast<double>(window_contributions_);
}

void Engine::replay(const std::vector<RecordedCall>& calls) {
  for (const RecordedCall& call : calls) {
    switch (call.kind) {
      case CallKind::Gather: sharding_gather(call.arg, call.flags); break;
      case CallKind::Release: sharding_release(call.arg); break;
      case CallKind::GradReady: sharding_grad_ready(call.arg); break;
      default: replay_host_call(call); break;
    }
  }
}

uint64_t Engine::join() {
  require_finalized("join");
  if (!manifest_.join) {
    throw Error(STRATA_ERR_UNSUPPORTED,
                "join: " + manifest_.source +
                    " does not set \"join\": true (every rank must agree, before the run starts, "
                    "to count the contributing ranks at each micro-batch)");
  }
  if (micro_batch_open_) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                "join: this rank made runtime calls in a micro-batch it did not end; call "
                "strata_step after the last micro-batch's backward, then strata_join");
  }
  return guarded(ApiCall::Join, -1, [&] {
    joined_ = true;
    uint64_t mirrored = 0;
    for (;;) {
      open_micro_batch();
      if (contributing_ranks_ == 0) break;  // every rank has joined
      if (!ran_micro_batch_) {
        throw Error(STRATA_ERR_INVALID_ARGUMENT,
                    "join: rank " + std::to_string(world_.rank) +
                        " joined before running a micro-batch, so it has no runtime calls to "
                        "mirror while " + std::to_string(contributing_ranks_) +
                        " rank(s) go on; run at least one micro-batch on every rank first");
      }
      replay(last_calls_);
      const strata_step_result result = step_once();
      close_micro_batch();
      if (result.outcome != STRATA_STEP_ACCUMULATED) auto_save();
      ++mirrored;
    }
    micro_batch_open_ = false;
    joined_ = false;
    if (world_.rank == 0) logger().info("join: every rank has joined at step {}", global_steps_);
    return mirrored;
  });
}

}  // namespace strata::rt
