#include "precision_config.hpp"

#include <nlohmann/json.hpp>
#include <strata/plugin.hpp>
#include <string>

namespace strata::amp {
namespace {

using nlohmann::json;

[[noreturn]] void invalid(const std::string& path, const std::string& what) {
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, path + ": " + what);
}

// Whether block `key` asks for that format. The block's other keys (loss_scale, hysteresis, ...)
// belong to the mixed-precision modes this build does not have yet, so they are not read here.
bool enabled(const json& root, const std::string& key) {
  auto block = root.find(key);
  if (block == root.end() || block->is_null()) return false;
  if (!block->is_object()) invalid(key, "expected an object, got " + block->dump());
  auto flag = block->find("enabled");
  if (flag == block->end()) return false;
  if (!flag->is_boolean()) {
    invalid(key + ".enabled", "expected true or false, got " + flag->dump());
  }
  return flag->get<bool>();
}

}  // namespace

PrecisionConfig parse_precision_config(std::string_view json_text) {
  const json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) invalid("config", "not valid JSON");
  if (!root.is_object()) invalid("config", "expected a JSON object, got " + root.dump());
  for (const auto& item : root.items()) {
    if (item.key() != "fp16" && item.key() != "bf16") {
      invalid(item.key(), "unknown key in the precision config; expected fp16, bf16");
    }
  }
  const bool fp16 = enabled(root, "fp16");
  const bool bf16 = enabled(root, "bf16");
  if (fp16 && bf16) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              "fp16.enabled and bf16.enabled are both true; choose one");
  }
  if (fp16 || bf16) {
    const std::string key = fp16 ? "fp16.enabled" : "bf16.enabled";
    sdk::fail(STRATA_ERR_UNSUPPORTED,
              key + ": true is not available; this build of strata_amp supports fp32 only");
  }
  return PrecisionConfig{};
}

}  // namespace strata::amp
