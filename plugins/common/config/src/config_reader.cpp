#include <strata_common/config_reader.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <strata/plugin.hpp>

namespace strata::common::config {
namespace {

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

}  // namespace

json parse_object(const char* text, const std::string& context) {
  if (text == nullptr || *text == '\0') return json::object();
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    invalid(context, std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) invalid(context, "expected a JSON object, got " + shown(root));
  return root;
}

void invalid(const std::string& path, const std::string& what) {
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, path + ": " + what);
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : ", ") + w;
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string shown(const json& value) {
  std::string text = value.dump();
  return text.size() <= 80 ? text : text.substr(0, 77) + "...";
}

ObjectReader::ObjectReader(const json& object, std::string path, std::string separator,
                           Nulls nulls)
    : object_(object), path_(std::move(path)), separator_(std::move(separator)), nulls_(nulls) {
  if (!object_.is_null() && !object_.is_object()) {
    config::invalid(path_, "expected an object, got " + shown(object_));
  }
}

const json* ObjectReader::find(const std::string& key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.push_back(key);
  if (!object_.is_object()) return nullptr;
  auto it = object_.find(key);
  if (it == object_.end() || (it->is_null() && nulls_ == Nulls::absent)) return nullptr;
  return &*it;
}

double ObjectReader::number(const std::string& key, double fallback, bool (*ok)(double),
                            const char* expected) {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_number() || !ok(v->get<double>())) {
    invalid(key, std::string("expected ") + expected + ", got " + shown(*v));
  }
  return v->get<double>();
}

double ObjectReader::positive(const std::string& key, double fallback) {
  return number(
      key, fallback, [](double x) { return std::isfinite(x) && x > 0; },
      "a positive finite number");
}

double ObjectReader::non_negative(const std::string& key, double fallback) {
  return number(
      key, fallback, [](double x) { return std::isfinite(x) && x >= 0; },
      "a non-negative finite number");
}

uint64_t ObjectReader::unsigned_integer(const std::string& key, uint64_t fallback, uint64_t least,
                                        uint64_t most, const std::string& expected) {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_number_unsigned() || v->get<uint64_t>() < least || v->get<uint64_t>() > most) {
    invalid(key, "expected " + expected + ", got " + shown(*v));
  }
  return v->get<uint64_t>();
}

bool ObjectReader::boolean(const std::string& key, bool fallback) {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) invalid(key, "expected true or false, got " + shown(*v));
  return v->get<bool>();
}

std::string ObjectReader::choice(const std::string& key, const std::string& fallback,
                                 const std::vector<std::string>& allowed) {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  if (v->is_string() &&
      std::find(allowed.begin(), allowed.end(), v->get<std::string>()) != allowed.end()) {
    return v->get<std::string>();
  }
  std::string list;
  for (size_t i = 0; i < allowed.size(); ++i) {
    list += (i == 0 ? "\"" : (i + 1 == allowed.size() ? " or \"" : ", \"")) + allowed[i] + "\"";
  }
  invalid(key, "expected " + list + ", got " + shown(*v));
}

std::string ObjectReader::text(const std::string& key, const std::string& fallback,
                               const char* expected) {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_string() || v->get<std::string>().empty()) {
    invalid(key, std::string("expected ") + expected + ", got " + shown(*v));
  }
  return v->get<std::string>();
}

void ObjectReader::reject_unknown(const std::string& context) const {
  if (!object_.is_object()) return;
  for (const auto& item : object_.items()) {
    if (std::find(known_.begin(), known_.end(), item.key()) != known_.end()) continue;
    std::string nearest;
    size_t best = 3;  // suggest only keys within two edits
    for (const std::string& k : known_) {
      if (const size_t d = distance(item.key(), k); d < best) best = d, nearest = k;
    }
    config::invalid(path(item.key()), "unknown key" + context + "; expected one of " +
                                          join(known_) +
                                          (nearest.empty() ? "" : "; did you mean '" + nearest + "'?"));
  }
}

}  // namespace strata::common::config
