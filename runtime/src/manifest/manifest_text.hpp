// A manifest's text, read and parsed within bounds. Any file or string ends in a document or a
// strata::rt::Error, never a crash: the size is limited, the nesting depth is checked by a SAX
// pass before the document is built (nlohmann's DOM code recurses once per level, so a deep
// enough document would overflow the stack), and a number beyond a double's range is reported
// with its JSON path.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>

namespace strata::rt {

constexpr size_t kMaxManifestBytes = size_t{16} << 20;  // 16 MiB: a ds_config is a few KiB
constexpr size_t kMaxManifestDepth = 64;                // objects and arrays, the top level is 1

// The file's bytes; throws naming the path if it cannot be read or exceeds kMaxManifestBytes.
std::string read_manifest_file(const std::string& path);

// Parses `text`; `where` starts every message ("run.json", "run.json: overrides").
nlohmann::json parse_manifest_text(const std::string& text, const std::string& where);

}  // namespace strata::rt
