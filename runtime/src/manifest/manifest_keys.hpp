// The manifest's top-level keys. DeepSpeed's are checked for type, and each one Strata does not
// act on is warned about by name; Strata's own are the four strata sections plus stall_inspector,
// max_consecutive_skips and timeline; anything else is an error that suggests the closest known key.
#pragma once

#include "manifest/manifest.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace strata::rt {

// Checks every top-level key of `doc` (null counts as absent, as DeepSpeed's config.get does,
// but a misspelt key is an error whatever its value). Strata's own keys are left to their readers.
void validate_top_level(const nlohmann::json& doc, const std::string& source);

// stall_inspector (overridden by STRATA_STALL_WARNING_SECONDS / STRATA_STALL_SHUTDOWN_SECONDS),
// max_consecutive_skips, timeline (overridden by STRATA_TIMELINE), wall_clock_breakdown and
// steps_per_print, into `m` from m.json.
void read_runtime_keys(Manifest& m);

// The "checkpoint" block (checkpoint_policy.cpp): dir (else STRATA_CHECKPOINT_DIR), save_every,
// auto_resume; DeepSpeed's keys accepted with a warning.
void read_checkpoint_policy(Manifest& m);

}  // namespace strata::rt
