// One plugin instance created through the target's ops table, for the checks that call a plugin
// directly (comm, precision, offload), and the status names their messages use.
#pragma once

#include "check.hpp"
#include "plugin_host.hpp"

#include <strata/plugin.hpp>

#include <string>

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

}  // namespace strata::plugin_check
