// Loading one stratum's plugin: find the file, check it before dlopen may map it (a regular ELF
// shared object for this machine, whole, writable by no stranger), check its sha256 pin, dlopen it
// RTLD_NOW | RTLD_LOCAL (a missing symbol fails here, naming the file), and check the descriptor
// the entry symbol returns: ABI version, struct sizes and kind.
#include "plugin_loader.hpp"

#include "error.hpp"
#include "library_file_check.hpp"
#include "log.hpp"
#include "sha256.hpp"

#include <dlfcn.h>

#include <cstddef>
#include <string_view>
#include <system_error>
#include <type_traits>

namespace strata::rt {
namespace fs = std::filesystem;

namespace {

// Sizes of the ABI 1.0 structs: up to and including their last 1.0 field. Later minor versions
// append fields, so these stay the floor a plugin must meet even after the header grows.
constexpr size_t kDescriptorSize1_0 = offsetof(strata_plugin_descriptor, ops) + sizeof(const void*);

size_t ops_size_1_0(int32_t kind) {
  switch (kind) {
    case STRATA_PLUGIN_COMM: return offsetof(strata_comm_ops, test) + sizeof(void*);
    case STRATA_PLUGIN_SHARDING: return offsetof(strata_sharding_ops, zero_grad) + sizeof(void*);
    case STRATA_PLUGIN_PRECISION: return offsetof(strata_precision_ops, cast) + sizeof(void*);
    case STRATA_PLUGIN_OFFLOAD: return offsetof(strata_offload_ops, step) + sizeof(void*);
    default: return 0;
  }
}

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

std::string version(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// "a sharding plugin", "an offload plugin".
std::string a_kind_plugin(int32_t kind) {
  const std::string name = plugin_kind_name(kind);
  const bool vowel = std::string_view("aeiou").find(name.front()) != std::string_view::npos;
  return (vowel ? "an " : "a ") + name + " plugin";
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

// Checks the descriptor an entry symbol returned. `at` is "<lib path>" prefixed by the manifest
// source and JSON path.
void check_descriptor(const strata_plugin_descriptor* d, strata_plugin_kind kind,
                      const std::string& at) {
  if (d == nullptr) throw Error(STRATA_ERR_ABI, at + ": " STRATA_PLUGIN_ENTRY_SYMBOL " returned NULL");
  // The version fields come first and are read before anything else: a plugin of another major
  // version may lay out everything after them differently.
  if (d->struct_size < offsetof(strata_plugin_descriptor, kind)) {
    throw Error(STRATA_ERR_ABI, at + ": plugin descriptor struct_size " + std::to_string(d->struct_size) +
                                    " is too small to hold an ABI version");
  }
  const std::string runtime_abi = version(STRATA_ABI_MAJOR, STRATA_ABI_MINOR);
  const std::string plugin_abi = version(d->abi_major, d->abi_minor);
  if (d->abi_major != STRATA_ABI_MAJOR) {
    throw Error(STRATA_ERR_ABI, at + ": plugin ABI " + plugin_abi + " is not compatible with this runtime's ABI " +
                                    runtime_abi + " (major must match)");
  }
  if (d->abi_minor > STRATA_ABI_MINOR) {
    throw Error(STRATA_ERR_ABI, at + ": plugin ABI " + plugin_abi + " is newer than this runtime's ABI " +
                                    runtime_abi + " (the runtime must be at least " + plugin_abi + ")");
  }
  if (d->struct_size < kDescriptorSize1_0) {
    throw Error(STRATA_ERR_ABI, at + ": plugin descriptor struct_size " + std::to_string(d->struct_size) +
                                    " is smaller than ABI 1.0's " + std::to_string(kDescriptorSize1_0));
  }
  if (d->name == nullptr || d->version == nullptr) {
    throw Error(STRATA_ERR_ABI, at + ": plugin descriptor has no name or version string");
  }
  if (d->kind != kind) {
    throw Error(STRATA_ERR_ABI, at + ": plugin '" + d->name + "' is " + a_kind_plugin(d->kind) +
                                    ", but this stratum needs " + a_kind_plugin(kind));
  }
  if (d->ops == nullptr) throw Error(STRATA_ERR_ABI, at + ": plugin descriptor has no ops table");
  // Every ops table starts with struct_size, then create and destroy.
  const auto* ops = static_cast<const strata_offload_ops*>(d->ops);
  if (ops->struct_size < ops_size_1_0(kind)) {
    throw Error(STRATA_ERR_ABI, at + ": " + plugin_kind_name(kind) + " ops table struct_size " +
                                    std::to_string(ops->struct_size) + " is smaller than ABI 1.0's " +
                                    std::to_string(ops_size_1_0(kind)));
  }
  if (ops->create == nullptr || ops->destroy == nullptr) {
    throw Error(STRATA_ERR_ABI, at + ": ops table has no create or destroy function");
  }
}

}  // namespace

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
  check_descriptor(plugin.descriptor_, kind, at + ": " + file);

  const strata_plugin_descriptor& d = *plugin.descriptor_;
  logger().debug("{}: loaded {} plugin '{}' {} (ABI {}.{}) from {}", at, plugin_kind_name(kind), d.name,
                 d.version, d.abi_major, d.abi_minor, file);
  return plugin;
}

}  // namespace strata::rt
