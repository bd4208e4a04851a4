// The manifest's "checkpoint" block: DeepSpeed's keys (accepted, not acted on: Strata's
// checkpoints need no tag validation or universal conversion) and Strata's own, which make the
// runtime save every N steps and resume from the latest checkpoint at strata_finalize without
// host code (a job strata-run restarted after a failure).
#include "log.hpp"
#include "manifest/key_suggestion.hpp"
#include "manifest/manifest_detail.hpp"
#include "manifest/manifest_keys.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string_view>

namespace strata::rt {
namespace {

using manifest_detail::fail;
using manifest_detail::pointer;
using manifest_detail::shown;

constexpr std::array<std::string_view, 3> kPolicyKeys{"dir", "save_every", "auto_resume"};
// DeepSpeed's checkpoint keys, accepted with a warning.
constexpr std::array<std::string_view, 4> kIgnoredKeys{"tag_validation", "load_universal",
                                                       "use_node_local_storage", "parallel_write"};

}  // namespace

void read_checkpoint_policy(Manifest& m) {
  const auto it = m.json.find("checkpoint");
  if (it == m.json.end() || it->is_null()) return;  // validate_top_level checked it is an object
  const nlohmann::json& block = *it;
  std::array<std::string_view, kPolicyKeys.size() + kIgnoredKeys.size()> known{};
  std::copy(kPolicyKeys.begin(), kPolicyKeys.end(), known.begin());
  std::copy(kIgnoredKeys.begin(), kIgnoredKeys.end(), known.begin() + kPolicyKeys.size());
  for (const auto& [key, value] : block.items()) {
    if (std::find(kIgnoredKeys.begin(), kIgnoredKeys.end(), key) != kIgnoredKeys.end()) {
      logger().warn("{}: {}: ignored: Strata's checkpoints need neither tag validation nor a universal "
                    "conversion, and each rank writes its own file", m.source, pointer("/checkpoint", key));
    } else if (std::find(kPolicyKeys.begin(), kPolicyKeys.end(), key) == kPolicyKeys.end()) {
      fail(m.source + ": " + pointer("/checkpoint", key) + ": unknown key (Strata's: dir, save_every, " +
           "auto_resume; DeepSpeed's, ignored: tag_validation, load_universal, use_node_local_storage, " +
           "parallel_write)" + did_you_mean(key, known));
    }
  }
  CheckpointPolicy& policy = m.checkpoint;
  if (const auto dir = block.find("dir"); dir != block.end() && !dir->is_null()) {
    if (!dir->is_string() || dir->get<std::string>().empty()) {
      fail(m.source + ": /checkpoint/dir: expected the checkpoint folder (a non-empty string), got " + shown(*dir));
    }
    policy.dir = dir->get<std::string>();
    policy.dir_origin = "/checkpoint/dir";
  }
  if (const auto every = block.find("save_every"); every != block.end() && !every->is_null()) {
    if (!every->is_number_unsigned() || every->get<uint64_t>() == 0) {
      fail(m.source + ": /checkpoint/save_every: expected a positive integer (optimizer steps between "
           "saves), got " + shown(*every));
    }
    policy.save_every = every->get<uint64_t>();
  }
  if (const auto resume = block.find("auto_resume"); resume != block.end() && !resume->is_null()) {
    if (!resume->is_boolean()) fail(m.source + ": /checkpoint/auto_resume: expected true or false, got " + shown(*resume));
    policy.auto_resume = resume->get<bool>();
  }
  if (policy.save_every == 0 && !policy.auto_resume) return;
  // strata-run --checkpoint-dir gives every rank the folder; the manifest's own wins.
  if (policy.dir.empty()) {
    const char* env = std::getenv("STRATA_CHECKPOINT_DIR");
    if (env == nullptr || *env == '\0') {
      fail(m.source + ": /checkpoint: " + (policy.save_every != 0 ? "save_every" : "auto_resume") +
           " needs a folder: set /checkpoint/dir, or start the job with strata-run --checkpoint-dir DIR " +
           "(STRATA_CHECKPOINT_DIR)");
    }
    policy.dir = env;
    policy.dir_origin = "STRATA_CHECKPOINT_DIR";
  }
}

}  // namespace strata::rt
