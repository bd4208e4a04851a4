// Finding a plugin library on the search path, loading it (RTLD_NOW | RTLD_LOCAL through
// Boost.DLL), checking its sha256 pin, entry symbol, ABI version and floor, kind and ops table.
#pragma once

#include "manifest/manifest.hpp"
#include "names.hpp"

#include <strata/plugin_api.h>

#include <boost/dll/shared_library.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace strata::rt {

// Search order: the manifest's folder, each entry of STRATA_PLUGIN_PATH (':'-separated), then
// <folder of libstrata.so>/strata/plugins (build tree and install prefix alike).
std::vector<std::filesystem::path> plugin_search_path(const std::filesystem::path& manifest_dir);

// Resolves a manifest "library" value to a file. A value containing '/' or ending in ".so" is a
// path (relative ones are taken from manifest_dir); otherwise "lib<name>.so", "<name>.so" and
// "<name>" are tried in each folder of search_path in order. nullopt if nothing matches.
std::optional<std::filesystem::path> find_plugin_library(
    const std::string& library, const std::filesystem::path& manifest_dir,
    const std::vector<std::filesystem::path>& search_path);

// An ops table (1.3 layout or later) as this runtime reads it: a zeroed Ops holding the first
// min(header.struct_size, sizeof(Ops)) bytes of `table`. An older plugin's smaller table reads as
// NULL past its end, and nothing past that end is read.
template <class Ops>
Ops copy_ops(const void* table) {
  Ops out{};
  const size_t size = static_cast<const strata_ops_header*>(table)->struct_size;
  std::memcpy(static_cast<void*>(&out), table, std::min(size, sizeof(Ops)));
  return out;
}

class LoadedPlugin {
 public:
  const strata_plugin_descriptor& descriptor() const { return *descriptor_; }
  const std::filesystem::path& path() const { return path_; }
  // Lower-case hex sha256 of the library file, as loaded.
  const std::string& sha256() const { return sha256_; }
  // Built with a 1.0-1.2 header (min_runtime_minor < STRATA_ABI_MINOR_TABLES): its table has
  // the old layout and is reached only through the legacy adapter (PluginInstance does that).
  bool legacy() const { return legacy_; }
  // The kind's ops table in today's layout, already checked (header, size, required functions), as
  // a copy (copy_ops): members past the plugin's header.struct_size are NULL. Not for legacy
  // plugins.
  template <class Ops>
  Ops ops() const { return copy_ops<Ops>(descriptor_->ops); }

 private:
  friend LoadedPlugin load_plugin(const StratumSpec&, strata_plugin_kind, const Manifest&);
  boost::dll::shared_library library_;
  const strata_plugin_descriptor* descriptor_ = nullptr;
  std::filesystem::path path_;
  std::string sha256_;
  bool legacy_ = false;
};

// Checks the descriptor an entry symbol returned and its ops table; throws strata::rt::Error
// (STRATA_ERR_ABI) with a sentence naming `where` ("<manifest>: <JSON path>"), `file` and the
// plugin. 1.3 and later: the floor (abi_minor) is at most runtime_abi_minor(); the table's header
// has at least 1.3's size for the kind, major 1, the descriptor's kind and a minor of at least 3;
// every Required function is set, and the sharding group functions are all set or all NULL.
// Tables of 1.0-1.2 plugins are checked by legacy::check_table.
void check_descriptor(const strata_plugin_descriptor* d, strata_plugin_kind kind,
                      const std::string& where, const std::string& file);

// Throws strata::rt::Error with a sentence naming the manifest, JSON path and library file.
LoadedPlugin load_plugin(const StratumSpec& spec, strata_plugin_kind kind, const Manifest& manifest);

}  // namespace strata::rt
