// The manifest's checkpoint block (API 1.11): saves every save_every optimizer steps and, with
// auto_resume, the load of the folder's latest checkpoint at the end of strata_finalize, so a job
// that strata-run restarted resumes without host code. The host's own state (data position, seed)
// goes with each save through strata_set_host_state and comes back through strata_resumed.
#include "engine/engine.hpp"
#include "log.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>

namespace strata::rt {

void Engine::set_host_state(const std::string& extra_json) {
  const nlohmann::json state = nlohmann::json::parse(extra_json, nullptr, false);
  if (state.is_discarded() || !state.is_object()) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                "set_host_state: expected a JSON object text, got '" + extra_json.substr(0, 80) + "'");
  }
  host_state_ = extra_json;
}

void Engine::auto_resume() {
  const CheckpointPolicy& policy = manifest_.checkpoint;
  if (!policy.auto_resume) return;
  std::error_code ec;
  const bool here = std::filesystem::exists(std::filesystem::path(policy.dir) / "latest", ec);
  // Every rank must see the same folder: a node-local one that holds a checkpoint on some hosts
  // only would make ranks disagree about loading (a collective) or silently start fresh.
  const double mine = here ? 1.0 : 0.0;
  double lowest = mine, highest = mine;
  collectives_->allreduce(&mine, &lowest, 1, STRATA_F64, STRATA_MIN);
  collectives_->allreduce(&mine, &highest, 1, STRATA_F64, STRATA_MAX);
  if (lowest != highest) {
    throw Error(STRATA_ERR_MISMATCH,
                manifest_.source + ": /checkpoint/auto_resume: " + policy.dir + "/latest (" + policy.dir_origin +
                    ") exists on some ranks and not on others (rank " + std::to_string(world_.rank) +
                    (here ? " has it" : " has not") + "); the checkpoint folder must be shared by every rank");
  }
  if (!here) {
    if (world_.rank == 0) logger().info("checkpoint: auto_resume: no checkpoint in {} yet; starting fresh", policy.dir);
    return;
  }
  // A checkpoint that cannot be loaded ends the job with the loader's message: never a silent
  // fresh start.
  resumed_ = load(policy.dir, "");
  if (world_.rank == 0) {
    logger().info("checkpoint: auto_resume: resumed from {}/{} at global step {}", policy.dir, resumed_->tag,
                  resumed_->global_steps);
  }
}

void Engine::auto_save() {
  const CheckpointPolicy& policy = manifest_.checkpoint;
  if (policy.save_every == 0 || global_steps_ == 0 || global_steps_ % policy.save_every != 0) return;
  save({policy.dir, "", host_state_, false});
}

}  // namespace strata::rt
