#include "sharding/in_tree_plugins.hpp"

#include <strata/strata.h>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <vector>

namespace strata::plugin_check::sharding {
namespace fs = std::filesystem;

namespace {

// The folders the runtime searches after the manifest's own (runtime/src/loader/plugin_search.cpp).
std::vector<fs::path> plugin_folders() {
  std::vector<fs::path> folders;
  if (const char* env = std::getenv("STRATA_PLUGIN_PATH")) {
    std::string rest(env);
    while (!rest.empty()) {
      const std::size_t colon = rest.find(':');
      const std::string entry = rest.substr(0, colon);
      if (!entry.empty()) folders.emplace_back(entry);  // "a::b" skips the empty entry
      rest = colon == std::string::npos ? std::string() : rest.substr(colon + 1);
    }
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&strata_create), &info) != 0 && info.dli_fname != nullptr) {
    folders.push_back(fs::path(info.dli_fname).parent_path() / "strata" / "plugins");
  }
  return folders;
}

}  // namespace

std::string in_tree_plugin(const std::string& name) {
  std::string searched;
  for (const fs::path& folder : plugin_folders()) {
    for (const std::string& file : {"lib" + name + ".so", name + ".so"}) {
      std::error_code ec;
      const fs::path candidate = fs::absolute(folder / file, ec).lexically_normal();
      if (!ec && fs::is_regular_file(candidate, ec)) return candidate.string();
    }
    searched += (searched.empty() ? "" : ", ") + folder.string();
  }
  throw std::runtime_error("in-tree plugin " + name + " not found (searched " + searched + ")");
}

KeptComm::KeptComm() {
  const char* env = std::getenv("STRATA_COMM_LIBRARY");
  if (env != nullptr && *env != '\0') {
    // The value as given, so that the runtime finds it equal to the manifest's and keeps it.
    manifest_library_ = env;
    const bool is_path = manifest_library_.find('/') != std::string::npos;
    path_ = is_path ? fs::absolute(manifest_library_).lexically_normal().string()
                    : in_tree_plugin(manifest_library_);
  } else {
    path_ = manifest_library_ = in_tree_plugin("strata_allreduce_mpi");
  }
  library_ = std::make_unique<PluginLibrary>(path_);
  strata_error err{sizeof(strata_error), 0, {}};
  if (library_->create<strata_comm_ops>("{}", host_.api(), &self_, &err) != STRATA_OK) {
    throw std::runtime_error(path_ + ": create failed: " + err.message);
  }
}

KeptComm::~KeptComm() {
  if (self_ != nullptr) ops().destroy(self_);
}

}  // namespace strata::plugin_check::sharding
