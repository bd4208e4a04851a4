// Loading one stratum's plugin: find the file, check it before dlopen may map it (a regular ELF
// shared object for this machine, whole, writable by no stranger), check its sha256 pin, dlopen it
// RTLD_NOW | RTLD_LOCAL (a missing symbol fails here, naming the file), and check the descriptor
// the entry symbol returns: ABI version and floor, struct sizes, kind, the ops table's header and
// its required functions (1.0-1.2 tables: through the legacy adapter's check).
#include "loader/plugin_loader.hpp"

#include "error.hpp"
#include "loader/descriptor_rules.hpp"
#include "loader/library_file_check.hpp"
#include "legacy_abi/legacy_plugin.hpp"
#include "log.hpp"
#include "loader/runtime_abi.hpp"
#include "loader/sha256.hpp"

#include <dlfcn.h>

#include <cstddef>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

namespace strata::rt {
namespace fs = std::filesystem;

namespace {

// Boost.DLL clears dlerror() after a failed load. Repeat the load with dlopen itself to read the
// loader's own text, which names the missing symbol or dependency.
std::string dlopen_error(const fs::path& file) {
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle != nullptr) {
    dlclose(handle);
    return {};
  }
  const char* text = dlerror();
  return text != nullptr ? text : "";
}

// A "library" value that names a path (as find_plugin_library reads it) which is a directory:
// find_plugin_library skips directories, and "not found" would hide what is wrong.
std::optional<fs::path> directory_named(const std::string& library, const fs::path& manifest_dir) {
  const bool path_like = library.find('/') != std::string::npos ||
                         (library.size() > 3 && library.compare(library.size() - 3, 3, ".so") == 0);
  if (!path_like) return std::nullopt;
  const fs::path candidate = fs::absolute(manifest_dir / library).lexically_normal();
  std::error_code ec;
  return fs::is_directory(candidate, ec) ? std::optional<fs::path>(candidate) : std::nullopt;
}

std::string searched_list(const std::vector<fs::path>& dirs) {
  std::string out;
  for (const fs::path& dir : dirs) out += (out.empty() ? "" : ", ") + dir.string();
  return out;
}

}  // namespace

void check_descriptor(const strata_plugin_descriptor* d, strata_plugin_kind kind,
                      const std::string& where, const std::string& file) {
  // The rules are strata-plugin-check's too (descriptor_rules.hpp): one reading of a plugin.
  const rules::Reading reading = rules::read_descriptor(d, kind, runtime_abi_minor(),
                                                        runtime_abi_text());
  if (!reading.refusal) return;
  const rules::Finding& f = *reading.refusal;
  const std::string subject = f.subject == rules::Subject::file
                                  ? file
                                  : rules::plugin_subject(d->kind, d->name, file);
  throw Error(STRATA_ERR_ABI, where + ": " + rules::joined_to(subject, f.subject, f.sentence));
}

LoadedPlugin load_plugin(const StratumSpec& spec, strata_plugin_kind kind, const Manifest& manifest) {
  const std::string at = manifest.source + ": " + spec.json_path;
  const std::vector<fs::path> search = plugin_search_path(manifest.base_dir);
  const std::optional<fs::path> found = find_plugin_library(spec.library, manifest.base_dir, search);
  if (!found) {
    if (const std::optional<fs::path> dir = directory_named(spec.library, manifest.base_dir)) {
      throw Error(STRATA_ERR_INVALID_ARGUMENT, at + "/library: refusing to load " + dir->string() +
                                                   ": it is a directory, not a shared library");
    }
    throw Error(STRATA_ERR_INVALID_ARGUMENT, at + "/library: plugin library '" + spec.library +
                                                 "' not found; searched: " + searched_list(search));
  }
  const std::string file = found->string();

  // Before dlopen: it trusts the file's headers and would fault on a truncated copy.
  if (const std::optional<std::string> problem = library_file_problem(*found)) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                at + "/library: refusing to load " + file + ": it " + *problem);
  }

  // Hashed once: for the pin here, and for the ranks' start-up agreement on which plugin this is.
  const std::string actual = sha256_file_hex(*found);
  if (spec.sha256 && actual != *spec.sha256) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT, at + "/sha256: " + file + " has sha256 " + actual +
                                                 ", but the manifest expects " + *spec.sha256);
  }

  LoadedPlugin plugin;
  plugin.path_ = *found;
  plugin.sha256_ = actual;
  boost::dll::fs::error_code ec;
  plugin.library_.load(boost::dll::fs::path(file),
                       boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec) {
    std::string why = dlopen_error(*found);
    if (why.empty()) why = ec.message();
    throw Error(STRATA_ERR_ABI, at + "/library: cannot load " + file + ": " + why);
  }
  if (!plugin.library_.has(STRATA_PLUGIN_ENTRY_SYMBOL)) {
    throw Error(STRATA_ERR_ABI,
                at + ": " + file + ": no symbol " STRATA_PLUGIN_ENTRY_SYMBOL "; is this a Strata plugin?");
  }
  auto& entry = plugin.library_.get<std::remove_pointer_t<strata_plugin_entry_fn>>(
      STRATA_PLUGIN_ENTRY_SYMBOL);
  plugin.descriptor_ = entry();
  check_descriptor(plugin.descriptor_, kind, at, file);

  const strata_plugin_descriptor& d = *plugin.descriptor_;
  plugin.legacy_ = d.min_runtime_minor < STRATA_ABI_MINOR_TABLES;
  if (plugin.legacy_) {
    logger().debug("{}: loaded {} plugin '{}' {} (ABI 1.{}, through the 1.0-1.2 adapter) from {}", at,
                   plugin_kind_name(kind), d.name, d.version, d.min_runtime_minor, file);
  } else {
    const auto& header = *static_cast<const strata_ops_header*>(d.ops);
    logger().debug("{}: loaded {} plugin '{}' {} (needs ABI {}.{}, built with {}.{}) from {}", at,
                   plugin_kind_name(kind), d.name, d.version, d.abi_major, d.min_runtime_minor,
                   header.abi_major, header.built_minor, file);
  }
  return plugin;
}

}  // namespace strata::rt
