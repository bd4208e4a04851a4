#include "config.hpp"

#include <strata_common/config_reader.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace strata::allreduce_gloo {

namespace {

// The config's spellings, in the order of the enums in config.hpp: what parse_config accepts and
// what wire_summary says.
const std::vector<std::string> kAlgorithms = {"auto", "ring", "bcube", "direct"};
const std::vector<std::string> kAgreements = {"auto", "direct", "ring"};
const char* const kHierarchies[] = {"false", "true", "auto"};

// The enum value at `name`'s place in `names` (a choice() already checked it is there).
template <class Enum>
Enum at(const std::vector<std::string>& names, const std::string& name) {
  return static_cast<Enum>(std::find(names.begin(), names.end(), name) - names.begin());
}

}  // namespace

std::string wire_summary(const Config& config) {
  return std::string("algorithm ") + kAlgorithms[static_cast<int>(config.algorithm)] +
         ", agreement " + kAgreements[static_cast<int>(config.agreement)] + ", hierarchical " +
         kHierarchies[static_cast<int>(config.hierarchical)] + ", chunk_bytes " +
         std::to_string(config.chunk_bytes) + ", " + common::shm::summary(config.shm);
}

Config parse_config(const char* config_json) {
  // The plugins' one reader (plugins/common/config): errors name "comm config: <key>", and an
  // unknown key is refused with the nearest known one.
  const common::config::json root = common::config::parse_object(config_json, "comm config");
  // A null value is refused, as a value of the wrong type.
  common::config::ObjectReader c(root, "comm config", ": ", common::config::Nulls::refused);
  Config config;
  config.timeout = std::chrono::milliseconds(
      c.unsigned_integer("timeout_ms", 30000, 1, 86'400'000,
                         "a positive integer of milliseconds (at most a day)"));
  config.algorithm =
      at<Config::Algorithm>(kAlgorithms, c.choice("algorithm", "auto", kAlgorithms));
  config.agreement =
      at<Config::Agreement>(kAgreements, c.choice("agreement", "auto", kAgreements));
  if (const std::optional<bool> h = c.boolean_or_auto("hierarchical")) {
    config.hierarchical = *h ? Config::Hierarchy::on : Config::Hierarchy::off;
  }
  config.chunk_bytes = c.unsigned_integer("chunk_bytes", Config::kDefaultChunkBytes, 1,
                                          UINT64_MAX, "a positive integer");
  config.file_store = c.choice("store", "tcp", {"tcp", "file"}) == "file";
  const bool has_path = c.find("store_path") != nullptr;
  config.store_path = c.text("store_path", "", "a directory path");
  config.shm = common::shm::read_settings(c);
  c.reject_unknown();
  if (config.file_store && !has_path) {
    common::config::invalid(
        "comm config",
        "store: \"file\" needs store_path, a directory every rank can write (a shared file system)");
  }
  if (!config.file_store && has_path) {
    common::config::invalid("comm config", "store_path: only used with store: \"file\"");
  }
  return config;
}

}  // namespace strata::allreduce_gloo
