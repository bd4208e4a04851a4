#include "config.hpp"

#include <strata/plugin.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace strata::allreduce_nccl {
namespace {

constexpr double kDefaultTimeoutSeconds = 600;
constexpr char kKnownKeys[] = "device, bootstrap, timeout_seconds, share_device";

[[noreturn]] void invalid(const std::string& message) {
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "comm config: " + message);
}

int device_ordinal(const nlohmann::json& value) {
  if (value.is_number_unsigned() && value.get<uint64_t>() < (1u << 16)) return value.get<int>();
  invalid("device: expected a CUDA ordinal (a non-negative integer), got " + value.dump());
}

Bootstrap bootstrap(const nlohmann::json& value) {
  if (value == "auto") return Bootstrap::kAuto;
  if (value == "mpi") return Bootstrap::kMpi;
  if (value == "tcp") return Bootstrap::kTcp;
  invalid("bootstrap: expected \"auto\", \"mpi\" or \"tcp\", got " + value.dump());
}

double positive_seconds(const nlohmann::json& value) {
  if (value.is_number() && value.get<double>() > 0) return value.get<double>();
  invalid("timeout_seconds: expected a positive number of seconds, got " + value.dump());
}

bool boolean(const nlohmann::json& value, const char* key) {
  if (value.is_boolean()) return value.get<bool>();
  invalid(std::string(key) + ": expected true or false, got " + value.dump());
}

}  // namespace

Config parse_config(const char* config_json) {
  Config config{-1, Bootstrap::kAuto, kDefaultTimeoutSeconds, false};
  if (config_json == nullptr || *config_json == '\0') return config;
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(config_json);
  } catch (const nlohmann::json::parse_error& e) {
    invalid(std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) invalid("expected a JSON object, got " + root.dump());
  for (const auto& [key, value] : root.items()) {
    if (key == "device") {
      config.device = device_ordinal(value);
    } else if (key == "bootstrap") {
      config.bootstrap = bootstrap(value);
    } else if (key == "timeout_seconds") {
      config.timeout_seconds = positive_seconds(value);
    } else if (key == "share_device") {
      config.share_device = boolean(value, "share_device");
    } else {
      invalid("unknown key '" + key + "' (known keys: " + kKnownKeys + ")");
    }
  }
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
