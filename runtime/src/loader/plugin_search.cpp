// Where plugin libraries are looked up, and how a manifest's "library" value becomes a file.
#include "loader/plugin_loader.hpp"

#include <boost/dll/runtime_symbol_info.hpp>

#include <cstdlib>
#include <string_view>
#include <system_error>

namespace strata::rt {
namespace fs = std::filesystem;

namespace {

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec) && !fs::is_directory(p, ec);
}

bool looks_like_path(const std::string& library) {
  return library.find('/') != std::string::npos ||
         (library.size() > 3 && library.compare(library.size() - 3, 3, ".so") == 0);
}

// The folder of the module this code is linked into: libstrata.so in a real host. Plugins are
// installed next to it, so a relocated install prefix still finds its own plugins.
fs::path runtime_plugin_dir() {
  boost::dll::fs::error_code ec;
  const auto module = boost::dll::this_line_location(ec);
  if (ec) return {};
  return fs::path(module.parent_path().string()) / "strata" / "plugins";
}

}  // namespace

std::vector<fs::path> plugin_search_path(const fs::path& manifest_dir) {
  std::vector<fs::path> dirs{manifest_dir};
  if (const char* env = std::getenv("STRATA_PLUGIN_PATH")) {
    std::string_view rest(env);
    while (!rest.empty()) {
      const auto colon = rest.find(':');
      const std::string_view entry = rest.substr(0, colon);
      if (!entry.empty()) dirs.emplace_back(entry);  // "a::b" skips the empty entry
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    }
  }
  if (fs::path own = runtime_plugin_dir(); !own.empty()) dirs.push_back(std::move(own));
  return dirs;
}

std::optional<fs::path> find_plugin_library(const std::string& library, const fs::path& manifest_dir,
                                            const std::vector<fs::path>& search_path) {
  if (looks_like_path(library)) {
    const fs::path candidate = fs::absolute(manifest_dir / library).lexically_normal();
    if (is_file(candidate)) return candidate;
    return std::nullopt;
  }
  for (const fs::path& dir : search_path) {
    for (const std::string& file : {"lib" + library + ".so", library + ".so", library}) {
      // Absolute, so that dlopen never falls back to its own system search for a bare name.
      const fs::path candidate = fs::absolute(dir / file).lexically_normal();
      if (is_file(candidate)) return candidate;
    }
  }
  return std::nullopt;
}

}  // namespace strata::rt
