// Reads the offload plugin's JSON config objects key by key, so that every error names the JSON
// path of the offending key and leftover keys (typos) are reported instead of ignored.
#pragma once

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <strata/plugin.hpp>
#include <string>
#include <vector>

namespace strata::offload::config {

using nlohmann::json;

[[noreturn]] inline void invalid(const std::string& path, const std::string& what) {
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, path + ": " + what);
}

inline std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

inline std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Reads the keys of one JSON object by name, remembering which were asked for, so that whatever
// is left over afterwards can be reported as unknown (typos must not be silently ignored).
class ObjectReader {
 public:
  // `object` may be null (treated as {}); anything else that is not an object is an error.
  ObjectReader(const json& object, std::string path) : object_(object), path_(std::move(path)) {
    if (!object_.is_null() && !object_.is_object()) {
      invalid(path_, "expected an object, got " + object_.dump());
    }
  }

  const json* find(const std::string& key) {
    if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.push_back(key);
    if (!object_.is_object()) return nullptr;
    auto it = object_.find(key);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }
  std::string path(const std::string& key) const { return path_ + "." + key; }

  double number(const std::string& key, double fallback, bool (*ok)(double), const char* expected) {
    const json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_number() || !ok(v->get<double>())) {
      invalid(path(key), std::string("expected ") + expected + ", got " + v->dump());
    }
    return v->get<double>();
  }
  double positive(const std::string& key, double fallback) {
    return number(
        key, fallback, [](double x) { return std::isfinite(x) && x > 0; },
        "a positive finite number");
  }
  double non_negative(const std::string& key, double fallback) {
    return number(
        key, fallback, [](double x) { return std::isfinite(x) && x >= 0; },
        "a non-negative finite number");
  }
  bool boolean(const std::string& key, bool fallback) {
    const json* v = find(key);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) invalid(path(key), "expected true or false, got " + v->dump());
    return v->get<bool>();
  }

  // Rejects every key that no find() asked for, naming the accepted ones.
  void reject_unknown(const std::string& context) const {
    if (!object_.is_object()) return;
    for (const auto& item : object_.items()) {
      if (std::find(known_.begin(), known_.end(), item.key()) == known_.end()) {
        invalid(path(item.key()), "unknown key" + context + "; expected one of " + join(known_));
      }
    }
  }

 private:
  const json& object_;
  std::string path_;
  std::vector<std::string> known_;
};

}  // namespace strata::offload::config
