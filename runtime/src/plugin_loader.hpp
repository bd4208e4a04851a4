// Finding a plugin library on the search path, loading it (RTLD_NOW | RTLD_LOCAL through
// Boost.DLL), checking its sha256 pin, entry symbol, ABI version, kind and ops-table size.
#pragma once

#include "manifest.hpp"

#include <strata/plugin_api.h>

#include <boost/dll/shared_library.hpp>

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

// "comm", "sharding", "precision", "offload", or "unknown kind <n>".
std::string plugin_kind_name(int32_t kind);

class LoadedPlugin {
 public:
  const strata_plugin_descriptor& descriptor() const { return *descriptor_; }
  const std::filesystem::path& path() const { return path_; }
  // Lower-case hex sha256 of the library file, as loaded.
  const std::string& sha256() const { return sha256_; }
  // The kind's ops table, already checked to be at least as large as ABI 1.0's.
  template <class Ops>
  const Ops& ops() const { return *static_cast<const Ops*>(descriptor_->ops); }

 private:
  friend LoadedPlugin load_plugin(const StratumSpec&, strata_plugin_kind, const Manifest&);
  boost::dll::shared_library library_;
  const strata_plugin_descriptor* descriptor_ = nullptr;
  std::filesystem::path path_;
  std::string sha256_;
};

// Throws strata::rt::Error with a sentence naming the manifest, JSON path and library file.
LoadedPlugin load_plugin(const StratumSpec& spec, strata_plugin_kind kind, const Manifest& manifest);

}  // namespace strata::rt
