#include "config.hpp"

#include <strata/plugin.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace strata::allreduce_gloo {
namespace {

const std::vector<std::string> kKeys = {"timeout_ms", "algorithm", "hierarchical", "store",
                                        "store_path"};

[[noreturn]] void invalid(const std::string& message) {
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "comm config: " + message);
}

// Edit distance, for "did you mean" on a misspelt key.
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t next = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = row[j];
      row[j] = next;
    }
  }
  return row[b.size()];
}

[[noreturn]] void unknown_key(const std::string& key) {
  std::string known, nearest;
  size_t best = 3;  // suggest only keys within two edits
  for (const std::string& k : kKeys) {
    known += (known.empty() ? "" : ", ") + k;
    if (const size_t d = distance(key, k); d < best) best = d, nearest = k;
  }
  invalid("unknown key '" + key + "'" + (nearest.empty() ? "" : " (did you mean '" + nearest + "'?)") +
          "; known keys: " + known);
}

std::string choice(const nlohmann::json& value, const char* key,
                   const std::vector<std::string>& allowed) {
  if (value.is_string() &&
      std::find(allowed.begin(), allowed.end(), value.get<std::string>()) != allowed.end()) {
    return value.get<std::string>();
  }
  std::string list;
  for (const std::string& a : allowed) list += (list.empty() ? "\"" : " or \"") + a + "\"";
  invalid(std::string(key) + ": expected " + list + ", got " + value.dump());
}

}  // namespace

Config parse_config(const char* config_json) {
  Config config;
  if (config_json == nullptr || *config_json == '\0') return config;
  nlohmann::json root;
  try {
    root = nlohmann::json::parse(config_json);
  } catch (const nlohmann::json::parse_error& e) {
    invalid(std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) invalid("expected a JSON object, got " + root.dump());
  bool has_path = false;
  for (const auto& [key, value] : root.items()) {
    if (key == "timeout_ms") {
      if (!value.is_number_unsigned() || value.get<uint64_t>() == 0 ||
          value.get<uint64_t>() > 86'400'000) {
        invalid("timeout_ms: expected a positive integer of milliseconds (at most a day), got " +
                value.dump());
      }
      config.timeout = std::chrono::milliseconds(value.get<uint64_t>());
    } else if (key == "algorithm") {
      config.bcube = choice(value, "algorithm", {"ring", "bcube"}) == "bcube";
    } else if (key == "hierarchical") {
      if (!value.is_boolean()) invalid("hierarchical: expected true or false, got " + value.dump());
      config.hierarchical = value.get<bool>();
    } else if (key == "store") {
      config.file_store = choice(value, "store", {"tcp", "file"}) == "file";
    } else if (key == "store_path") {
      if (!value.is_string() || value.get<std::string>().empty()) {
        invalid("store_path: expected a directory path, got " + value.dump());
      }
      config.store_path = value.get<std::string>();
      has_path = true;
    } else {
      unknown_key(key);
    }
  }
  if (config.file_store && !has_path) {
    invalid("store: \"file\" needs store_path, a directory every rank can write (a shared file system)");
  }
  if (!config.file_store && has_path) invalid("store_path: only used with store: \"file\"");
  return config;
}

}  // namespace strata::allreduce_gloo
