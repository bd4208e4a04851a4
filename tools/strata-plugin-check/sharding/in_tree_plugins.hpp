// The in-tree plugins the sharding checks need beside the library under test (the MPI comm
// plugin, strata_amp, strata_offload, and strata_zero as the stage-0 reference), and the one
// comm instance kept alive across the checks' runtimes.
//
// Why a kept comm instance: each check creates and destroys runtimes one after the other in this
// process, and the MPI comm plugin calls MPI_Finalize when its last instance that initialised
// MPI is destroyed; MPI cannot be initialised again, so the second runtime would fail ("MPI was
// already finalized"). An instance of the same library (the same file, so dlopen shares its
// globals with the runtime's copy) created before the first runtime and destroyed after the
// last keeps MPI up in between. It also serves as the comm table for querying the plugin under
// test directly (the host C API does not expose the sharding caps).
#pragma once

#include "plugin_host.hpp"

#include <memory>
#include <string>

namespace strata::plugin_check::sharding {

// Absolute path of in-tree plugin `name` (e.g. "strata_zero"), looked up as the runtime looks up
// a manifest's library name outside the manifest's folder: STRATA_PLUGIN_PATH, then
// <folder of libstrata>/strata/plugins. Throws naming the folders searched when it is missing.
std::string in_tree_plugin(const std::string& name);

// One instance of the comm plugin the runtimes will load, for the whole of check_sharding: the
// in-tree MPI plugin, or the library STRATA_COMM_LIBRARY names (strata-run --backend gloo sets
// it, and the runtime then loads it whatever the manifest says). Collective: every rank creates
// and destroys it at the same point.
class KeptComm {
 public:
  KeptComm();
  ~KeptComm();
  KeptComm(const KeptComm&) = delete;
  KeptComm& operator=(const KeptComm&) = delete;

  // What the manifests' comm section names: the same file as this instance's.
  const std::string& manifest_library() const { return manifest_library_; }
  const strata_comm_ops& ops() const { return library_->ops<strata_comm_ops>(); }
  void* self() const { return self_; }

 private:
  std::string manifest_library_;
  std::string path_;
  std::unique_ptr<PluginLibrary> library_;
  PluginHost host_;
  void* self_ = nullptr;
};

}  // namespace strata::plugin_check::sharding
