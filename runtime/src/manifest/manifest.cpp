// Manifest loading: read and parse within bounds, apply overrides, validate the top-level keys
// (manifest_keys.cpp), read the four strata sections and compose each plugin's config object.
#include "manifest/manifest.hpp"

#include "error.hpp"
#include "log.hpp"
#include "manifest/manifest_detail.hpp"
#include "manifest/manifest_keys.hpp"
#include "manifest/manifest_text.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>

namespace strata::rt {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using manifest_detail::fail;
using manifest_detail::pointer;
using manifest_detail::shown;

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

// STRATA_COMM_LIBRARY names the comm library for this run whatever the manifest says: strata-run
// --backend gloo sets it, because ranks it starts have no MPI, and a manifest naming the MPI
// plugin (the embedded default does) would give each of them a world of one. A manifest's comm
// config and sha256 belong to the library it names, so they go when the library changes.
void apply_comm_library_env(StratumSpec& comm, const std::string& source) {
  const char* env = std::getenv("STRATA_COMM_LIBRARY");
  if (env == nullptr || *env == '\0' || comm.library == env) return;
  logger().info("{}: /comm/library: {} from STRATA_COMM_LIBRARY instead of the manifest's {}{}",
                source, env, comm.library,
                comm.config.empty() && !comm.sha256 ? "" : " (its config and sha256 are not used)");
  comm.library = env;
  comm.sha256.reset();
  comm.config = json::object();
}

json merged(json base, const json& patch) {
  base.merge_patch(patch);
  return base;
}

// The ZeRO stage the sharding plugin will run, if its composed config states a valid one; stage 0
// (DeepSpeed's default) when it states none. An invalid stage is the sharding plugin's to reject.
std::optional<int64_t> zero_stage(const json& sharding_config) {
  auto it = sharding_config.find("stage");
  if (it == sharding_config.end() || it->is_null()) return 0;
  if (!it->is_number()) return std::nullopt;
  const double stage = it->get<double>();
  if (stage == 0 || stage == 1 || stage == 2 || stage == 3) return static_cast<int64_t>(stage);
  return std::nullopt;
}

// DeepSpeed reads offload_param only at stage 3 (parameters are sharded there alone). Below it,
// say that it is ignored and keep it from the offload plugin, whose log would suggest it acts.
void drop_offload_param_below_stage3(Manifest& m, bool in_own_config) {
  auto it = m.offload.config.find("offload_param");
  if (it == m.offload.config.end()) return;
  const std::optional<int64_t> stage = zero_stage(m.sharding.config);
  if (!stage || *stage >= 3) return;
  // Nothing to say about a block that asks for nothing: null, {} or device "none".
  const bool asks =
      it->is_object() ? !it->empty() && it->value("device", json()) != "none" : !it->is_null();
  if (asks) {
    logger().warn("{}: {}: ignored below ZeRO stage 3 (zero_optimization.stage is {}), as in "
                  "DeepSpeed: parameters are not partitioned, so there is nothing to offload",
                  m.source,
                  in_own_config ? "/offload/config/offload_param" : "/zero_optimization/offload_param",
                  *stage);
  }
  m.offload.config.erase(it);
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
  json sharding = zero ? *zero : json::object();
  // DeepSpeed spells the gradients' reduction dtype at the top level; the sharding stratum reduces.
  if (const json* dtype = block("communication_data_type")) {
    if (!sharding.contains("communication_data_type")) sharding["communication_data_type"] = *dtype;
  }
  m.sharding.config = merged(std::move(sharding), m.sharding.config);

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
  const bool param_in_own_config = m.offload.config.contains("offload_param");
  m.offload.config = merged(std::move(offload), m.offload.config);
  drop_offload_param_below_stage3(m, param_in_own_config);
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
  m.json = parse_manifest_text(text, m.source);
  // Checked before the overrides: a merge patch would silently replace a non-object document.
  if (!m.json.is_object()) {
    fail(m.source + ": expected a JSON object at the top level, got " + shown(m.json));
  }
  if (overrides != nullptr) {
    const json patch = parse_manifest_text(overrides, m.source + ": overrides");
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
  read_runtime_keys(m);

  m.comm = read_stratum(m.json, "comm", m.source);
  apply_comm_library_env(m.comm, m.source);
  m.sharding = read_stratum(m.json, "sharding", m.source);
  m.precision = read_stratum(m.json, "precision", m.source);
  m.offload = read_stratum(m.json, "offload", m.source);
  compose_configs(m);
  return m;
}

}  // namespace strata::rt
