// The manifest's checkpoint block (API 1.11): saves every save_every optimizer steps and, with
// auto_resume, the load of the folder's latest checkpoint at the end of strata_finalize, so a job
// that strata-run restarted resumes without host code. The host's own state (data position, seed)
// goes with each save through strata_set_host_state and comes back through strata_resumed.
#include "checkpoint/checkpoint_files.hpp"
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
  // Every rank must see the same folder and the same latest checkpoint: a folder local to each
  // host, or a shared one whose `latest` some ranks read stale (NFS attribute caching), would make
  // ranks load different checkpoints or some start fresh. Each rank says which tag it would load
  // ("" for none); they must all agree.
  std::string mine;
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(policy.dir) / "latest", ec)) {
    try {
      mine = resolve_checkpoint_tag(policy.dir, "");
    } catch (const Error& e) {
      mine = std::string("(unreadable: ") + e.what() + ")";
    }
  }
  const std::vector<std::string> seen = collectives_->allgather_strings(mine);
  for (size_t r = 0; r < seen.size(); ++r) {
    if (seen[r] == seen[0]) continue;
    const auto shown = [](const std::string& tag) { return tag.empty() ? std::string("no checkpoint") : tag; };
    throw Error(STRATA_ERR_MISMATCH,
                manifest_.source + ": /checkpoint/auto_resume: ranks see different checkpoints in " + policy.dir +
                    " (" + policy.dir_origin + "): rank 0 " + shown(seen[0]) + ", rank " + std::to_string(r) +
                    " " + shown(seen[r]) + "; the checkpoint folder must be shared by every rank");
  }
  if (mine.empty()) {
    if (world_.rank == 0) logger().info("checkpoint: auto_resume: no checkpoint in {} yet; starting fresh", policy.dir);
    return;
  }
  // A checkpoint that cannot be loaded ends the job with the loader's message: never a silent
  // fresh start.
  resumed_ = load(policy.dir, mine);
  if (world_.rank == 0) {
    logger().info("checkpoint: auto_resume: resumed from {}/{} at global step {}", policy.dir, resumed_->tag,
                  resumed_->global_steps);
  }
}

void Engine::auto_save() {
  const CheckpointPolicy& policy = manifest_.checkpoint;
  if (policy.save_every == 0 || global_steps_ == 0 || global_steps_ % policy.save_every != 0) return;
  save({policy.dir, "", host_state_, false, true});
}

}  // namespace strata::rt
