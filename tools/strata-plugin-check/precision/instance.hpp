// What the single-process strata's checks (precision, offload) share: the config a scenario
// hands the plugin, number formatting and status checks (instances: plugin_instance.hpp).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <strata/plugin.hpp>
#include <string>

#include "check.hpp"
#include "plugin_instance.hpp"

namespace strata::plugin_check {

// The config a scenario creates the plugin with: the scenario's own DeepSpeed-shaped object,
// merged with the user's --config at the top level. Where both have a key, the SCENARIO's value
// replaces the user's whole value (its "fp16" or "optimizer" block is a complete statement: a
// user's "loss_scale_window" or "momentum" slipped into it would change what the reference has to
// expect); the user's other keys are added, e.g. plugin-specific ones such as "threads", or where
// the offload state lives ("offload_optimizer").
inline nlohmann::json merge_user_config(nlohmann::json scenario, const nlohmann::json& user) {
  for (const auto& [key, value] : user.items()) {
    if (!scenario.contains(key)) scenario[key] = value;
  }
  return scenario;
}

inline std::string scenario_config(const Target& target, const nlohmann::json& scenario) {
  const nlohmann::json user = nlohmann::json::parse(target.config_json, nullptr, false);
  if (user.is_discarded() || !user.is_object()) {
    throw std::runtime_error("--config is not a JSON object: " + target.config_json);
  }
  return merge_user_config(scenario, user).dump();
}

// A double as the shortest text that reads back to it ("0.001", "65536", "nan").
inline std::string number_text(double x) {
  char text[32];
  for (int digits = 6; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, x);
    if (std::strtod(text, nullptr) == x) break;
  }
  return text;
}

// Throws with `what`, the status and the plugin's message unless `status` is STRATA_OK.
inline void expect_ok(strata_status status, const strata_error& err, const std::string& what) {
  if (status != STRATA_OK) {
    throw std::runtime_error(what + " failed (" + status_name(status) + "): " + err.message);
  }
}

}  // namespace strata::plugin_check
