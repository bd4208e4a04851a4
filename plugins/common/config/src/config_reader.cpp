#include <strata_common/config_reader.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <strata/plugin.hpp>

namespace strata::common::config {
namespace {

// An absent block, read as {} (a null object is treated as one).
const json kAbsent;

// Beyond this many known keys, an unknown one is refused without the list (zero_optimization
// has 57).
constexpr size_t kListedKeysAtMost = 16;

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

json parse_object(const char* text, const std::string& context, const char* not_json) {
  if (text == nullptr || *text == '\0') return json::object();
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& e) {
    invalid(context, std::string(not_json) + ": " + e.what());
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

std::string either(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    out += (i == 0 ? "" : (i + 1 == words.size() ? " or " : ", ")) + words[i];
  }
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
                           Nulls nulls, NumberStrings strings)
    : object_(object),
      path_(std::move(path)),
      separator_(std::move(separator)),
      nulls_(nulls),
      strings_(strings) {
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

const json* ObjectReader::find_unless_null(const std::string& key) {
  const json* v = find(key);
  return v != nullptr && v->is_null() ? nullptr : v;
}

double ObjectReader::number(const std::string& key, double fallback, bool (*ok)(double),
                            const char* expected) {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  const std::optional<double> d = number_in(*v, strings_);
  if (!d || !ok(*d)) invalid(key, std::string("expected ") + expected + ", got " + shown(*v));
  return *d;
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

int64_t ObjectReader::whole_number(const std::string& key, int64_t fallback, int64_t least,
                                   int64_t most, const std::string& expected) {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  const std::optional<int64_t> n = whole_number_in(*v, strings_);
  if (!n || *n < least || *n > most) invalid(key, "expected " + expected + ", got " + shown(*v));
  return *n;
}

bool ObjectReader::boolean(const std::string& key, bool fallback) {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  if (!v->is_boolean()) invalid(key, "expected true or false, got " + shown(*v));
  return v->get<bool>();
}

namespace {

// `allowed` as the message lists them: "fp32", "fp16".
std::vector<std::string> quoted(const std::vector<std::string>& allowed) {
  std::vector<std::string> out;
  for (const std::string& a : allowed) out.push_back('"' + a + '"');
  return out;
}

// The allowed value `value` names, directly or through a synonym; nullopt when none.
std::optional<std::string> chosen(const json& value, const std::vector<std::string>& allowed,
                                  const std::vector<std::pair<std::string, std::string>>& synonyms) {
  if (!value.is_string()) return std::nullopt;
  const std::string& name = value.get_ref<const std::string&>();
  if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) return name;
  for (const auto& [spelling, meant] : synonyms) {
    if (name == spelling) return meant;
  }
  return std::nullopt;
}

}  // namespace

std::string ObjectReader::choice(const std::string& key, const std::string& fallback,
                                 const std::vector<std::string>& allowed,
                                 const std::vector<std::pair<std::string, std::string>>& synonyms) {
  const json* v = find(key);
  if (v == nullptr) return fallback;
  if (auto name = chosen(*v, allowed, synonyms)) return *name;
  invalid(key, "expected " + either(quoted(allowed)) + ", got " + shown(*v));
}

ObjectReader ObjectReader::object(const std::string& key) {
  const json* v = find(key);
  // Only under Nulls::refused does find() return a null, which the reader below would take as {}.
  if (v != nullptr && v->is_null()) invalid(key, "expected an object, got null");
  return ObjectReader(v != nullptr ? *v : kAbsent, path(key), separator_, nulls_, strings_);
}

std::optional<bool> ObjectReader::boolean_or_auto(const std::string& key) {
  const json* v = find(key);
  if (v == nullptr || (v->is_string() && v->get<std::string>() == "auto")) return std::nullopt;
  if (!v->is_boolean()) invalid(key, "expected true, false or \"auto\", got " + shown(*v));
  return v->get<bool>();
}

std::optional<bool> ObjectReader::boolean_or_null(const std::string& key) {
  const json* v = find_unless_null(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) invalid(key, "expected true, false or null, got " + shown(*v));
  return v->get<bool>();
}

std::optional<std::string> ObjectReader::choice_or_null(const std::string& key,
                                                        const std::vector<std::string>& allowed) {
  const json* v = find_unless_null(key);
  if (v == nullptr) return std::nullopt;
  if (auto name = chosen(*v, allowed, {})) return name;
  std::vector<std::string> listed = quoted(allowed);
  listed.push_back("null");
  invalid(key, "expected " + either(listed) + ", got " + shown(*v));
}

ObjectReader ObjectReader::object_or_null(const std::string& key) {
  const json* v = find_unless_null(key);
  if (v != nullptr && !v->is_object()) invalid(key, "expected an object or null, got " + shown(*v));
  return ObjectReader(v != nullptr ? *v : kAbsent, path(key), separator_, nulls_, strings_);
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
    const std::string listed =
        known_.size() <= kListedKeysAtMost ? "; expected one of " + join(known_) : "";
    config::invalid(path(item.key()),
                    "unknown key" + context + listed +
                        (nearest.empty() ? "" : "; did you mean '" + nearest + "'?"));
  }
}

}  // namespace strata::common::config
