// One plugin instance created through the target's ops table, for the checks that call a plugin
// directly (comm, precision, offload), and the status names their messages use.
#pragma once

#include "check.hpp"
#include "plugin_host.hpp"

#include <strata/plugin.hpp>

#include <string>
#include <vector>

namespace strata::plugin_check {

// A status as plugin_api.h spells it ("STRATA_ERR_NUMERIC"), for messages to plugin authors.
inline std::string status_name(int32_t status) {
  static const char* const names[] = {"STRATA_OK",          "STRATA_ERR_INVALID_ARGUMENT",
                                      "STRATA_ERR_UNSUPPORTED", "STRATA_ERR_OUT_OF_MEMORY",
                                      "STRATA_ERR_COMM",    "STRATA_ERR_MISMATCH",
                                      "STRATA_ERR_NUMERIC", "STRATA_ERR_INTERNAL",
                                      "STRATA_ERR_ABI"};
  return status >= 0 && status <= 8 ? names[status] : "status " + std::to_string(status);
}

// One instance of the target's `Ops`, destroyed with this object. `ok()` false: create refused
// the config, and `refusal()` says why (a scenario then usually skips: the plugin does not claim it).
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
  // Whether create answered STRATA_ERR_UNSUPPORTED: with the checker's own config, the plugin
  // cannot run on this machine (check.hpp, Verdict::cannot_run).
  bool unsupported() const { return status_ == STRATA_ERR_UNSUPPORTED; }
  // The plugin's own message, as create returned it.
  const std::string& message() const { return error_; }
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

// The first check of a stratum run in one process (precision, offload), "create": the plugin
// created with each of `configs` (the stratum's scenarios, the checker's --config merged in) until
// one is accepted. When every one is refused with STRATA_ERR_UNSUPPORTED the plugin cannot run
// here: the check says so with the first reason and this returns false, and the stratum's other
// checks are not run. Other refusals are the checks' business (a scenario not claimed is a skip).
template <class Ops>
bool probe_create(const Target& target, const std::vector<std::string>& configs,
                  Recorder& recorder) {
  bool runnable = true;
  recorder.run("create", [&] {
    std::string refusals, first_reason;
    bool all_unsupported = !configs.empty();
    for (const std::string& config : configs) {
      Instance<Ops> plugin(target, config);
      if (plugin.ok()) return Verdict::pass("config " + config);
      if (first_reason.empty()) first_reason = plugin.message();
      all_unsupported = all_unsupported && plugin.unsupported();
      refusals += (refusals.empty() ? "" : "; ") + plugin.refusal();
    }
    if (all_unsupported) {
      runnable = false;
      return Verdict::cannot_run(first_reason);
    }
    return Verdict::skip("no config was accepted: " + refusals);
  });
  return runnable;
}

}  // namespace strata::plugin_check
