// Helpers shared by the manifest readers (manifest*.cpp): one error type and wording, and values
// and keys shown shortened so that no message can echo a whole user document.
#pragma once

#include "error.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace strata::rt::manifest_detail {

[[noreturn]] inline void fail(const std::string& message) {
  throw Error(STRATA_ERR_INVALID_ARGUMENT, message);
}

// At most `limit` characters of `text`, the cut marked with "...".
inline std::string shortened(const std::string& text, size_t limit = 80) {
  return text.size() <= limit ? text : text.substr(0, limit - 3) + "...";
}

// A value as it appears in the document, shortened so one bad value cannot flood the message.
inline std::string shown(const nlohmann::json& value) { return shortened(value.dump()); }

// "/parent/key" as a JSON pointer (~ and / escaped), the key shortened: a key can be megabytes.
inline std::string pointer(const std::string& parent, const std::string& key) {
  return (nlohmann::json::json_pointer(parent) / shortened(key, 64)).to_string();
}

}  // namespace strata::rt::manifest_detail
