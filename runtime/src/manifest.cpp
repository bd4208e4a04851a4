// Manifest loading: read, parse, apply overrides, validate DeepSpeed keys and the four strata
// sections, and compose each plugin's config object.
#include "manifest.hpp"

#include "error.hpp"
#include "log.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>

namespace strata::rt {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& message) {
  throw Error(STRATA_ERR_INVALID_ARGUMENT, message);
}

// A value as it appears in the document, shortened so one bad value cannot flood the message.
std::string shown(const json& value) {
  std::string text = value.dump();
  return text.size() <= 80 ? text : text.substr(0, 77) + "...";
}

std::string pointer(const std::string& parent, const std::string& key) {
  return (json::json_pointer(parent) / key).to_string();
}

std::string read_manifest_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) fail(path + ": cannot open manifest: Is a directory");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!in) fail(path + ": cannot open manifest: " + std::strerror(errno));
  std::string text;
  char chunk[4096];
  size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof chunk, in.get())) > 0) text.append(chunk, got);
  if (std::ferror(in.get())) fail(path + ": cannot read manifest: " + std::strerror(errno));
  return text;
}

// nlohmann's message reads "[json.exception.parse_error.101] parse error at line 3, column 5:
// <reason>"; keep the position and reason, drop the exception id.
json parse_json(const std::string& text, const std::string& where) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    const auto at = what.find("parse error");
    std::string detail = at == std::string::npos
                             ? ": " + what
                             : what.substr(at + std::string_view("parse error").size());
    fail(where + ": malformed JSON" + detail);
  }
}

// ---- DeepSpeed training keys -------------------------------------------------------------------

enum class Expect { PositiveInteger, NonNegativeNumber, PositiveNumber, Boolean, Object, String };

struct KeyRule {
  std::string_view key;
  Expect expect;
};

// Keys of a ds_config we recognise. Those the runtime or a default plugin uses are checked for
// type here so that the message names the file; the rest are accepted for ds_config parity.
constexpr std::array<KeyRule, 33> kDeepSpeedKeys{{
    {"train_batch_size", Expect::PositiveInteger},
    {"train_micro_batch_size_per_gpu", Expect::PositiveInteger},
    {"gradient_accumulation_steps", Expect::PositiveInteger},
    {"gradient_clipping", Expect::NonNegativeNumber},
    {"optimizer", Expect::Object},
    {"scheduler", Expect::Object},
    {"zero_optimization", Expect::Object},
    {"fp16", Expect::Object},
    {"bf16", Expect::Object},
    {"bfloat16", Expect::Object},  // DeepSpeed's alias of bf16
    {"amp", Expect::Object},
    {"steps_per_print", Expect::PositiveInteger},
    {"wall_clock_breakdown", Expect::Boolean},
    {"memory_breakdown", Expect::Boolean},
    {"dump_state", Expect::Boolean},
    {"prescale_gradients", Expect::Boolean},
    {"gradient_predivide_factor", Expect::PositiveNumber},
    {"sparse_gradients", Expect::Boolean},
    {"zero_allow_untested_optimizer", Expect::Boolean},
    {"zero_force_ds_cpu_optimizer", Expect::Boolean},
    {"communication_data_type", Expect::String},
    {"activation_checkpointing", Expect::Object},
    {"flops_profiler", Expect::Object},
    {"tensorboard", Expect::Object},
    {"wandb", Expect::Object},
    {"csv_monitor", Expect::Object},
    {"comms_logger", Expect::Object},
    {"checkpoint", Expect::Object},
    {"data_types", Expect::Object},
    {"aio", Expect::Object},
    {"elasticity", Expect::Object},
    {"autotuning", Expect::Object},
    {"data_efficiency", Expect::Object},
}};

constexpr std::array<std::string_view, 4> kStrata{"comm", "sharding", "precision", "offload"};

bool matches(const json& v, Expect expect) {
  switch (expect) {
    case Expect::PositiveInteger:
      return (v.is_number_unsigned() && v.get<uint64_t>() > 0) ||
             (v.is_number_integer() && v.get<int64_t>() > 0);
    case Expect::NonNegativeNumber: return v.is_number() && v.get<double>() >= 0.0;
    case Expect::PositiveNumber: return v.is_number() && v.get<double>() > 0.0;
    case Expect::Boolean: return v.is_boolean();
    case Expect::Object: return v.is_object();
    case Expect::String: return v.is_string();
  }
  return false;
}

const char* describe(Expect expect) {
  switch (expect) {
    case Expect::PositiveInteger: return "a positive integer";
    case Expect::NonNegativeNumber: return "a number >= 0";
    case Expect::PositiveNumber: return "a number > 0";
    case Expect::Boolean: return "true or false";
    case Expect::Object: return "an object";
    case Expect::String: return "a string";
  }
  return "?";
}

const KeyRule* find_rule(const std::string& key) {
  auto it = std::find_if(kDeepSpeedKeys.begin(), kDeepSpeedKeys.end(),
                         [&](const KeyRule& r) { return r.key == key; });
  return it == kDeepSpeedKeys.end() ? nullptr : &*it;
}

bool is_stratum(const std::string& key) {
  return std::find(kStrata.begin(), kStrata.end(), key) != kStrata.end();
}

// Checks every top-level key; null counts as absent (as DeepSpeed's config.get does).
void validate_top_level(const json& doc, const std::string& source) {
  for (const auto& [key, value] : doc.items()) {
    if (is_stratum(key) || value.is_null()) continue;
    if (const KeyRule* rule = find_rule(key)) {
      if (!matches(value, rule->expect)) {
        fail(source + ": " + pointer("", key) + ": expected " + describe(rule->expect) + ", got " +
             shown(value));
      }
    } else if (value.is_object() && value.contains("library")) {
      fail(source + ": " + pointer("", key) + ": unknown stratum '" + key +
           "' (expected comm, sharding, precision or offload)");
    } else {
      logger().warn("{}: {}: unknown key, ignored", source, pointer("", key));
    }
  }
}

std::optional<uint64_t> positive_integer(const json& doc, const char* key) {
  if (!doc.contains(key) || doc[key].is_null()) return std::nullopt;
  return doc[key].get<uint64_t>();  // type already checked
}

// ---- strata sections ---------------------------------------------------------------------------

const char* default_library(std::string_view stratum) {
  if (stratum == "comm") return "strata_allreduce_mpi";
  if (stratum == "sharding") return "strata_zero";
  if (stratum == "precision") return "strata_amp";
  return "strata_offload";
}

bool is_sha256_hex(const std::string& s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c) != 0; });
}

// Reads {"library", "sha256", "config"}; `config` is left as the section's own config object.
StratumSpec read_stratum(const json& doc, const std::string& stratum, const std::string& source) {
  StratumSpec spec;
  spec.stratum = stratum;
  spec.json_path = pointer("", stratum);
  spec.library = default_library(stratum);
  spec.config = json::object();
  if (!doc.contains(stratum) || doc[stratum].is_null()) return spec;

  const json& section = doc[stratum];
  const std::string& path = spec.json_path;
  if (!section.is_object()) {
    fail(source + ": " + path + ": expected an object with \"library\", \"sha256\" or \"config\", got " +
         shown(section));
  }
  for (const auto& [key, value] : section.items()) {
    const std::string at = source + ": " + pointer(path, key) + ": ";
    if (key == "library") {
      if (!value.is_string() || value.get<std::string>().empty()) {
        fail(at + "expected a non-empty string (a plugin name or a path), got " + shown(value));
      }
      spec.library = value.get<std::string>();
    } else if (key == "sha256") {
      if (!value.is_string() || !is_sha256_hex(value.get<std::string>())) {
        fail(at + "expected 64 hexadecimal digits, got " + shown(value));
      }
      std::string hex = value.get<std::string>();
      std::transform(hex.begin(), hex.end(), hex.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      spec.sha256 = hex;
    } else if (key == "config") {
      if (!value.is_object() && !value.is_null()) fail(at + "expected an object, got " + shown(value));
      if (value.is_object()) spec.config = value;
    } else {
      fail(at + "unknown key (expected library, sha256 or config)");
    }
  }
  return spec;
}

json merged(json base, const json& patch) {
  base.merge_patch(patch);
  return base;
}

// The config each plugin's create() receives: DeepSpeed's blocks for that stratum, with the
// stratum's own "config" merged over them (RFC 7386), so either spelling works.
void compose_configs(Manifest& m) {
  const json& doc = m.json;
  auto block = [&](const char* key) -> const json* {
    return doc.contains(key) && !doc[key].is_null() ? &doc[key] : nullptr;
  };

  // comm keeps its own config as read.
  const json* zero = block("zero_optimization");
  m.sharding.config = merged(zero ? *zero : json::object(), m.sharding.config);

  json precision = json::object();
  if (const json* fp16 = block("fp16")) precision["fp16"] = *fp16;
  if (const json* bf16 = block("bf16") ? block("bf16") : block("bfloat16")) precision["bf16"] = *bf16;
  m.precision.config = merged(std::move(precision), m.precision.config);

  json offload = json::object();
  if (const json* optimizer = block("optimizer")) offload["optimizer"] = *optimizer;
  // Where the optimizer state lives and how it is streamed are the offload stratum's business,
  // though DeepSpeed spells them inside zero_optimization.
  for (const char* key : {"offload_optimizer", "offload_param", "sub_group_size"}) {
    if (zero && zero->contains(key) && !(*zero)[key].is_null()) offload[key] = (*zero)[key];
  }
  m.offload.config = merged(std::move(offload), m.offload.config);
}

}  // namespace

Manifest load_manifest(const strata_create_options& options) {
  // Fields past the caller's struct_size were not written by it (an older host): treat as NULL.
#define STRATA_OPTION(field) \
  (STRATA_STRUCT_HAS(&options, strata_create_options, field) ? options.field : nullptr)
  const char* path = STRATA_OPTION(manifest_path);
  const char* inline_json = STRATA_OPTION(manifest_json);
  const char* base_dir = STRATA_OPTION(base_dir);
  const char* overrides = STRATA_OPTION(overrides_json);
#undef STRATA_OPTION
  if ((path == nullptr) == (inline_json == nullptr)) {
    fail(std::string("strata_create_options: exactly one of manifest_path and manifest_json must be set (") +
         (path == nullptr ? "got neither" : "got both") + ")");
  }

  Manifest m;
  std::string text;
  if (path != nullptr) {
    m.source = path;
    text = read_manifest_file(path);
    const fs::path folder = fs::absolute(fs::path(path)).parent_path();
    m.base_dir = folder.lexically_normal();
  } else {
    m.source = "<inline manifest>";
    text = inline_json;
    m.base_dir = base_dir != nullptr ? fs::path(base_dir) : fs::current_path();
  }
  m.json = parse_json(text, m.source);
  // Checked before the overrides: a merge patch would silently replace a non-object document.
  if (!m.json.is_object()) {
    fail(m.source + ": expected a JSON object at the top level, got " + shown(m.json));
  }
  if (overrides != nullptr) {
    const json patch = parse_json(overrides, m.source + ": overrides");
    if (!patch.is_object()) {
      fail(m.source + ": overrides: expected a JSON object (a merge patch), got " + shown(patch));
    }
    m.json.merge_patch(patch);
  }

  validate_top_level(m.json, m.source);
  m.train_batch_size = positive_integer(m.json, "train_batch_size");
  m.train_micro_batch_size_per_gpu = positive_integer(m.json, "train_micro_batch_size_per_gpu");
  m.gradient_accumulation_steps = positive_integer(m.json, "gradient_accumulation_steps");
  if (m.json.contains("gradient_clipping") && !m.json.at("gradient_clipping").is_null()) {
    m.gradient_clipping = m.json.at("gradient_clipping").get<double>();
  }

  m.comm = read_stratum(m.json, "comm", m.source);
  m.sharding = read_stratum(m.json, "sharding", m.source);
  m.precision = read_stratum(m.json, "precision", m.source);
  m.offload = read_stratum(m.json, "offload", m.source);
  compose_configs(m);
  return m;
}

}  // namespace strata::rt
