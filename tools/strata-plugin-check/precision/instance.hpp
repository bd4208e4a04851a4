// What the single-process strata's checks (precision, offload) share: the config a scenario
// hands the plugin, and one plugin instance created through the target's ops table.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <strata/plugin.hpp>
#include <string>

#include "check.hpp"
#include "plugin_host.hpp"

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

// "NUMERIC" for STRATA_ERR_NUMERIC, for messages.
inline std::string status_name(int32_t s) {
  static const char* const names[] = {"OK",   "INVALID_ARGUMENT", "UNSUPPORTED", "OUT_OF_MEMORY",
                                      "COMM", "MISMATCH",         "NUMERIC",     "INTERNAL",
                                      "ABI"};
  return s >= 0 && s <= 8 ? names[s] : "status " + std::to_string(s);
}

// One instance of the target's `Ops`, destroyed with this object. `ok()` false: create refused
// the config, and `error()` says why (a scenario then usually skips: the plugin does not claim it).
template <class Ops>
class Instance {
 public:
  Instance(const Target& target, const std::string& config_json)
      : ops_(target.ops<Ops>()), config_(config_json) {
    strata_plugin_create_args args{};
    args.struct_size = sizeof(args);
    args.config_json = config_.c_str();
    args.host = host_.api();
    strata_error err = sdk::make_error();
    status_ = ops_.create(&args, &self_, &err);
    if (status_ != STRATA_OK) {
      self_ = nullptr;
      error_ = err.message;
    }
  }
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  ~Instance() {
    if (self_ != nullptr) ops_.destroy(self_);
  }

  bool ok() const { return status_ == STRATA_OK; }
  // "create refused {config}: <message>", for a skip line.
  std::string refusal() const {
    return "create refused " + config_ + ": " + error_ + " (" + status_name(status_) + ")";
  }
  const Ops& ops() const { return ops_; }
  void* self() const { return self_; }
  PluginHost& host() { return host_; }

 private:
  PluginHost host_;
  const Ops& ops_;
  std::string config_;
  void* self_ = nullptr;
  strata_status status_ = STRATA_ERR_INTERNAL;
  std::string error_;
};

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
