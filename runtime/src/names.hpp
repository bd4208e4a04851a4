// Small pieces of text the loader and the legacy adapter both write into their messages.
#pragma once

#include <strata/plugin_api.h>

#include <string>
#include <vector>

namespace strata::rt {

// "comm", "sharding", "precision", "offload", or "unknown kind <n>".
inline std::string plugin_kind_name(int32_t kind) {
  switch (kind) {
    case STRATA_PLUGIN_COMM: return "comm";
    case STRATA_PLUGIN_SHARDING: return "sharding";
    case STRATA_PLUGIN_PRECISION: return "precision";
    case STRATA_PLUGIN_OFFLOAD: return "offload";
    default: return "unknown kind " + std::to_string(kind);
  }
}

// "a", "a and b", "a, b and c".
inline std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : (i + 1 == names.size() ? " and " : ", ")) + names[i];
  }
  return out;
}

}  // namespace strata::rt
