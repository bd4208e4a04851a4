// Loading one stratum's plugin: find the file, check it before dlopen may map it (a regular ELF
// shared object for this machine, whole, writable by no stranger), check its sha256 pin, dlopen it
// RTLD_NOW | RTLD_LOCAL (a missing symbol fails here, naming the file), and check the descriptor
// the entry symbol returns: ABI version and floor, struct sizes, kind, the ops table's header and
// its required functions (1.0-1.2 tables: through the legacy adapter's check).
#include "loader/plugin_loader.hpp"

#include "error.hpp"
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

// Sizes of the ABI 1.3 ops tables (the first with strata_ops_header), up to and including their
// last 1.3 member: the least a table with a header may be.
size_t ops_size_1_3(int32_t kind) {
  switch (kind) {
    case STRATA_PLUGIN_COMM: return STRATA_COMM_OPS_SIZE_1_3;
    case STRATA_PLUGIN_SHARDING: return STRATA_SHARDING_OPS_SIZE_1_3;
    case STRATA_PLUGIN_PRECISION: return STRATA_PRECISION_OPS_SIZE_1_3;
    case STRATA_PLUGIN_OFFLOAD: return STRATA_OFFLOAD_OPS_SIZE_1_3;
    default: return 0;
  }
}

// One function pointer of a table, by name.
struct Member {
  const char* name;
  bool present;
};

template <class Ops>
std::vector<Member> required_members(const Ops& o);

template <>
std::vector<Member> required_members(const strata_comm_ops& o) {
  // wait is required only when caps.nonblocking is 1: the engine checks it after query.
  return {{"create", o.create != nullptr},       {"destroy", o.destroy != nullptr},
          {"query", o.query != nullptr},         {"allreduce", o.allreduce != nullptr},
          {"allgather", o.allgather != nullptr}, {"broadcast", o.broadcast != nullptr},
          {"barrier", o.barrier != nullptr}};
}

template <>
std::vector<Member> required_members(const strata_sharding_ops& o) {
  return {{"create", o.create != nullptr},
          {"destroy", o.destroy != nullptr},
          {"query", o.query != nullptr},
          {"register_param", o.register_param != nullptr},
          {"finalize", o.finalize != nullptr},
          {"grad_ready", o.grad_ready != nullptr},
          {"finish_reduce", o.finish_reduce != nullptr},
          {"owned_shards", o.owned_shards != nullptr},
          {"publish", o.publish != nullptr},
          {"zero_grad", o.zero_grad != nullptr}};
}

template <>
std::vector<Member> required_members(const strata_precision_ops& o) {
  return {{"create", o.create != nullptr},         {"destroy", o.destroy != nullptr},
          {"query", o.query != nullptr},           {"loss_scale", o.loss_scale != nullptr},
          {"grad_stats", o.grad_stats != nullptr}, {"update", o.update != nullptr},
          {"cast", o.cast != nullptr}};
}

template <>
std::vector<Member> required_members(const strata_offload_ops& o) {
  return {{"create", o.create != nullptr},         {"destroy", o.destroy != nullptr},
          {"query", o.query != nullptr},           {"init_state", o.init_state != nullptr},
          {"step", o.step != nullptr}};
}

// `who` is "<manifest>: <json path>: <kind> plugin '<name>' (<file>)".
// Reads the table as the instance will (copy_ops): a member past header.struct_size is NULL.
template <class Ops>
void check_functions(const void* table, const std::string& who) {
  const Ops ops = copy_ops<Ops>(table);
  for (const Member& m : required_members(ops)) {
    if (!m.present) {
      throw Error(STRATA_ERR_ABI, who + ": ops table has no '" + m.name + "' (required)");
    }
  }
  if constexpr (std::is_same_v<Ops, strata_sharding_ops>) {
    // Parameter groups: all five or none.
    const std::vector<Member> group = {{"define_group", ops.define_group != nullptr},
                                       {"gather", ops.gather != nullptr},
                                       {"release", ops.release != nullptr},
                                       {"param_view", ops.param_view != nullptr},
                                       {"end_micro_step", ops.end_micro_step != nullptr}};
    std::vector<std::string> has, lacks;
    for (const Member& m : group) (m.present ? has : lacks).push_back(m.name);
    if (!has.empty() && !lacks.empty()) {
      throw Error(STRATA_ERR_ABI,
                  who + ": ops table has " + joined(has) + " but no " + joined(lacks) +
                      " (the parameter-group functions are optional as a set: all five or none)");
    }
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
std::string a_kind(int32_t kind, const char* noun) {
  const std::string name = plugin_kind_name(kind);
  const bool vowel = std::string_view("aeiou").find(name.front()) != std::string_view::npos;
  return (vowel ? "an " : "a ") + name + " " + noun;
}
std::string a_kind_plugin(int32_t kind) { return a_kind(kind, "plugin"); }
// "a sharding table", "an offload table".
std::string a_kind_table(int32_t kind) { return a_kind(kind, "table"); }

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
  const std::string at = where + ": " + file;
  if (d == nullptr) throw Error(STRATA_ERR_ABI, at + ": " STRATA_PLUGIN_ENTRY_SYMBOL " returned NULL");
  // The version fields come first and are read before anything else: a plugin of another major
  // version may lay out everything after them differently.
  if (d->struct_size < offsetof(strata_plugin_descriptor, kind)) {
    throw Error(STRATA_ERR_ABI, at + ": plugin descriptor struct_size " + std::to_string(d->struct_size) +
                                    " is too small to hold an ABI version");
  }
  const uint32_t runtime_minor = runtime_abi_minor();
  const std::string runtime_abi = runtime_abi_text();
  const std::string plugin_abi = version(d->abi_major, d->min_runtime_minor);
  if (d->abi_major != STRATA_ABI_MAJOR) {
    throw Error(STRATA_ERR_ABI, at + ": plugin ABI " + plugin_abi + " is not compatible with this runtime's ABI " +
                                    runtime_abi + " (major must match)");
  }
  if (d->struct_size < STRATA_PLUGIN_DESCRIPTOR_SIZE_1_0) {
    throw Error(STRATA_ERR_ABI, at + ": plugin descriptor struct_size " + std::to_string(d->struct_size) +
                                    " is smaller than ABI 1.0's " + std::to_string(STRATA_PLUGIN_DESCRIPTOR_SIZE_1_0));
  }
  if (d->name == nullptr || d->version == nullptr) {
    throw Error(STRATA_ERR_ABI, at + ": plugin descriptor has no name or version string");
  }
  // The descriptor's minor is the lowest runtime minor the plugin needs (its floor).
  if (d->min_runtime_minor > runtime_minor) {
    throw Error(STRATA_ERR_ABI, where + ": " + plugin_kind_name(d->kind) + " plugin '" + d->name +
                                    "' (" + file + ") needs runtime ABI " + plugin_abi +
                                    " or later; this runtime is " + runtime_abi);
  }
  if (d->kind != kind) {
    throw Error(STRATA_ERR_ABI, at + ": plugin '" + d->name + "' is " + a_kind_plugin(d->kind) +
                                    ", but this stratum needs " + a_kind_plugin(kind));
  }
  if (d->ops == nullptr) throw Error(STRATA_ERR_ABI, at + ": plugin descriptor has no ops table");

  if (d->min_runtime_minor < STRATA_ABI_MINOR_TABLES) {
    // Built with a 1.0-1.2 header: a table without strata_ops_header, loaded through the adapter.
    legacy::check_table(*d, kind, at);
    return;
  }

  const std::string who = where + ": " + plugin_kind_name(kind) + " plugin '" + d->name + "' (" + file + ")";
  // Every 1.3 table starts with its header; nothing past it is read before it is checked.
  const auto& header = *static_cast<const strata_ops_header*>(d->ops);
  const size_t least = ops_size_1_3(kind);
  if (header.struct_size < least) {
    throw Error(STRATA_ERR_ABI, who + ": ops table header says " + std::to_string(header.struct_size) +
                                    " bytes, smaller than ABI 1.3's " + std::to_string(least) + " for " +
                                    a_kind_table(kind));
  }
  if (header.abi_major != STRATA_ABI_MAJOR) {
    throw Error(STRATA_ERR_ABI, who + ": ops table header says ABI major " +
                                    std::to_string(header.abi_major) + ", but the descriptor and this "
                                    "runtime say " + std::to_string(STRATA_ABI_MAJOR));
  }
  if (header.kind != kind) {
    throw Error(STRATA_ERR_ABI, who + ": ops table header says it is " + a_kind_table(header.kind) +
                                    ", but the descriptor says " + a_kind_table(kind));
  }
  if (header.built_minor < STRATA_ABI_MINOR_TABLES) {
    throw Error(STRATA_ERR_ABI, who + ": ops table header says ABI " +
                                    version(header.abi_major, header.built_minor) +
                                    ", older than 1." + std::to_string(STRATA_ABI_MINOR_TABLES) +
                                    ", the first whose tables have a header");
  }
  // A table built with a newer header is larger: only the fields this runtime knows are read; an
  // older one is smaller, and its missing members read as NULL.
  switch (kind) {
    case STRATA_PLUGIN_COMM: check_functions<strata_comm_ops>(d->ops, who); break;
    case STRATA_PLUGIN_SHARDING: check_functions<strata_sharding_ops>(d->ops, who); break;
    case STRATA_PLUGIN_PRECISION: check_functions<strata_precision_ops>(d->ops, who); break;
    case STRATA_PLUGIN_OFFLOAD: check_functions<strata_offload_ops>(d->ops, who); break;
  }
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
