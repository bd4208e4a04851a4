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

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace strata::rt {

namespace {

uint64_t mix(uint64_t hash, uint64_t value) {  // FNV-1a over 64-bit words
  return (hash ^ value) * 0x100000001b3ull;
}

}  // namespace

void Engine::open_micro_batch() {
  if (!join_tracking() || micro_batch_open_) return;
  // [contributes, signature of the last micro-batch's calls (0: none yet)], from every rank.
  const int64_t mine[2] = {joined_ ? 0 : 1,
                           ran_micro_batch_ ? static_cast<int64_t>(last_signature_ | 1) : 0};
  std::vector<int64_t> all(2 * static_cast<size_t>(world_.size));
  collectives_->allgather(mine, all.data(), 2, STRATA_I64);
  micro_batch_open_ = true;
  contributing_ranks_ = 0;
  int joined = -1, running = -1;
  for (int r = 0; r < world_.size; ++r) {
    contributing_ranks_ += static_cast<uint64_t>(all[2 * r]);
    if (all[2 * r + 1] == 0) continue;
    (all[2 * r] == 0 ? joined : running) = r;
  }
  // A joined rank repeats its last micro-batch's calls; the others' previous micro-batch shows
  // whether they make the same ones. Checked alike on every rank, so all fail together.
  if (joined < 0 || running < 0 || all[2 * joined + 1] == all[2 * running + 1]) return;
  throw Error(STRATA_ERR_MISMATCH,
              "join: rank " + std::to_string(joined) +
                  " has joined and repeats the runtime calls of its last micro-batch, but rank " +
                  std::to_string(running) +
                  "'s previous micro-batch made other calls (gathers, releases, grad_ready or "
                  "host collectives); with \"join\", every micro-batch must make the same runtime "
                  "calls in the same order (make evaluation or logging collectives after every "
                  "rank has joined)");
}

void Engine::refuse_while_joined(const char* call) {
  if (!join_tracking()) return;
  open_micro_batch();
  if (contributing_ranks_ == static_cast<uint64_t>(world_.size)) return;  // nobody has joined
  throw Error(STRATA_ERR_INVALID_ARGUMENT,
              std::string(call) + ": " +
                  std::to_string(static_cast<uint64_t>(world_.size) - contributing_ranks_) +
                  " of " + std::to_string(world_.size) +
                  " ranks have joined (strata_join) and never make this call; make it after every "
                  "rank has joined");
}

void Engine::record_call(const RecordedCall& call) {
  if (!manifest_.join || joined_) return;
  calls_.push_back(call);
  for (uint64_t word : {uint64_t(call.kind), uint64_t(call.arg), uint64_t(call.flags), call.count,
                        uint64_t(uint32_t(call.dtype)), uint64_t(uint32_t(call.op))}) {
    signature_ = mix(signature_, word);
  }
}

void Engine::close_micro_batch() {
  micro_batch_open_ = false;
  if (!manifest_.join || joined_) return;
  ++own_contributions_;
  last_calls_.swap(calls_);
  calls_.clear();
  last_signature_ = mix(signature_, last_calls_.size());
  signature_ = 0xcbf29ce484222325ull;
  ran_micro_batch_ = true;
}


uint64_t Engine::exchange_window_state(bool boundary) {
  if (!join_tracking()) return 0;
  // [micro-batches this rank stepped in the window, when its host last set the learning rate, that
  // rate (NaN: none)] from every rank. A joined rank's host no longer sets the rate, so the newest
  // one is the running ranks'. (A rank that joined inside this window still counted itself when it
  // opened, so the opening count cannot decide either.)
  const double mine[3] = {static_cast<double>(own_contributions_),
                          static_cast<double>(lr_override_step_), lr_override_};
  std::vector<double> all(3 * static_cast<size_t>(world_.size));
  collectives_->allgather(mine, all.data(), 3, STRATA_F64);
  uint64_t contributions = 0;
  size_t newest = 0;
  for (size_t r = 0; r < static_cast<size_t>(world_.size); ++r) {
    contributions += static_cast<uint64_t>(all[3 * r]);
    if (all[3 * r + 1] > all[3 * newest + 1]) newest = r;
  }
  lr_override_step_ = static_cast<uint64_t>(all[3 * newest + 1]);
  lr_override_ = all[3 * newest + 2];
  if (boundary) own_contributions_ = 0;
  return contributions;
}

double Engine::contribution_factor(uint64_t contributions) const {
  if (!join_tracking() || contributions == 0) return 1.0;
  const double full = static_cast<double>(world_.size) *
                      static_cast<double>(batch_.gradient_accumulation_steps);
  return full / static_cast<double>(contributions);
}

void Engine::replay(const std::vector<RecordedCall>& calls, size_t from) {
  for (size_t i = from; i < calls.size(); ++i) {
    const RecordedCall& call = calls[i];
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
  std::optional<Error> save_failure;  // an automatic save's failure, reported after the loop
  const uint64_t mirrored = guarded(ApiCall::Join, -1, [&] {
    if (!manifest_.join) {
      throw Error(STRATA_ERR_UNSUPPORTED,
                  "join: " + manifest_.source +
                      " does not set \"join\": true (every rank must agree, before the run "
                      "starts, to count the contributing ranks at each micro-batch)");
    }
    // Calls made since this rank's last step (a metric allreduce after the step, a save) opened
    // a micro-batch in which the others counted this rank: it finishes that one by replaying the
    // rest of its last micro-batch, which must begin with them.
    size_t done = 0;
    if (micro_batch_open_) {
      const bool prefix = calls_.size() <= last_calls_.size() &&
                          std::equal(calls_.begin(), calls_.end(), last_calls_.begin());
      if (!prefix || !ran_micro_batch_) {
        throw Error(STRATA_ERR_INVALID_ARGUMENT,
                    "join: rank " + std::to_string(world_.rank) + " made " +
                        std::to_string(calls_.size()) +
                        " runtime call(s) since its last strata_step that its last micro-batch "
                        "does not begin with, so it cannot take part in the rest of this "
                        "micro-batch; call strata_join right after the last strata_step");
      }
      done = calls_.size();
    }
    calls_.clear();
    joined_ = true;
    uint64_t count = 0;
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
      replay(last_calls_, done);
      done = 0;
      close_micro_batch();
      const strata_step_result result = step_once();
      ++count;
      if (result.outcome == STRATA_STEP_ACCUMULATED) continue;
      // The others' strata_step reports a failed automatic save and they go on; so does this rank.
      try {
        auto_save();
      } catch (const Error& e) {
        if (!save_failure) save_failure = e;
      }
      activity_.enter_call(ApiCall::Join, -1);  // the save's own call ended the board's entry
    }
    micro_batch_open_ = false;
    joined_ = false;
    // The last ranks to run may have set the rate after the others joined (no boundary: a window
    // left incomplete stays accumulated).
    exchange_window_state(false);
    if (world_.rank == 0) logger().info("join: every rank has joined at step {}", global_steps_);
    return count;
  });
  if (save_failure) throw *save_failure;
  return mirrored;
}

}  // namespace strata::rt
