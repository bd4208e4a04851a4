#include "config.hpp"

#include <strata_common/config_reader.hpp>
#include <string>

namespace strata::allreduce_nccl {
namespace {

constexpr double kDefaultTimeoutSeconds = 600;

}  // namespace

Config parse_config(const char* config_json) {
  // The plugins' one reader (plugins/common/config): errors name "comm config: <key>".
  const common::config::json root = common::config::parse_object(config_json, "comm config");
  // A null value is refused, as a value of the wrong type.
  common::config::ObjectReader c(root, "comm config", ": ", common::config::Nulls::refused);
  Config config{-1, Bootstrap::kAuto, kDefaultTimeoutSeconds, false};
  if (c.find("device") != nullptr) {
    config.device = static_cast<int>(c.unsigned_integer(
        "device", 0, 0, (1u << 16) - 1, "a CUDA ordinal (a non-negative integer)"));
  }
  const std::string mode = c.choice("bootstrap", "auto", {"auto", "mpi", "tcp"});
  config.bootstrap = mode == "mpi"   ? Bootstrap::kMpi
                     : mode == "tcp" ? Bootstrap::kTcp
                                     : Bootstrap::kAuto;
  config.timeout_seconds = c.number(
      "timeout_seconds", kDefaultTimeoutSeconds, [](double x) { return x > 0; },
      "a positive number of seconds");
  config.share_device = c.boolean("share_device", false);
  c.reject_unknown();
  return config;
}

const char* bootstrap_name(Bootstrap bootstrap) {
  switch (bootstrap) {
    case Bootstrap::kAuto:
      return "auto";
    case Bootstrap::kMpi:
      return "mpi";
    case Bootstrap::kTcp:
      return "tcp";
  }
  return "?";
}

}  // namespace strata::allreduce_nccl
