// One created plugin instance of a stratum: owns the loaded library and the plugin's `self`, and
// turns failed calls into strata::rt::Error with the plugin named. Every call goes through a
// current-layout (1.3+) table the instance owns: a copy of the plugin's own (members past its
// header.struct_size NULL), or for a 1.0-1.2 plugin the legacy adapter's (optional functions the
// plugin lacks NULL), whose `self` wraps the old instance.
#pragma once

#include "error.hpp"
#include "legacy_abi/legacy_plugin.hpp"
#include "loader/plugin_loader.hpp"

#include <strata/plugin_api.h>

#include <dlfcn.h>

#include <string>
#include <utility>

namespace strata::rt {

template <class Ops>
class PluginInstance {
 public:
  PluginInstance() = default;
  PluginInstance(const PluginInstance&) = delete;
  PluginInstance& operator=(const PluginInstance&) = delete;
  ~PluginInstance() {
    if (self_ != nullptr) ops_->destroy(self_);
  }

  // Creates the instance; the plugin's own rejection message is passed through, prefixed with the
  // manifest and the stratum's JSON path so the user knows which section to edit.
  void create(LoadedPlugin library, const StratumSpec& spec, const std::string& manifest_source,
              const strata_host_api* host) {
    library_ = std::move(library);
    // Keep the library mapped until process exit, even after destroy: transports such as MPI
    // leave threads and exit handlers inside it, and MPI cannot be initialised twice anyway.
    dlopen(library_.path().c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    const strata_plugin_descriptor& descriptor = library_.descriptor();
    // Our own copy either way: the adapter's table, with NULL where this plugin lacks an optional
    // function, or the plugin's table cut to its header.struct_size (members past it NULL).
    table_ = library_.legacy() ? legacy::adapter_ops_for<Ops>(descriptor) : library_.template ops<Ops>();
    ops_ = &table_;
    label_ = spec.stratum + " plugin '" + descriptor.name + "'";
    strata_error err = new_error();
    const std::string config = spec.config.dump();
    strata_plugin_create_args args{};
    args.struct_size = sizeof(args);
    args.config_json = config.c_str();
    args.host = host;
    const strata_status status = library_.legacy()
                                     ? legacy::create(descriptor, &args, &self_, &err)
                                     : ops_->create(&args, &self_, &err);
    if (status != STRATA_OK) {
      self_ = nullptr;
      // A transport that cannot start is not a config mistake.
      const char* what = status == STRATA_ERR_COMM ? "could not start: " : "rejected its config: ";
      throw Error(status, manifest_source + ": " + spec.json_path + ": " + label_ + " (" +
                              library_.path().string() + ") " + what + err.message);
    }
  }

  // Calls ops.<fn>(self, args..., &err) and throws on failure, naming the plugin and `what`.
  template <class Fn, class... Args>
  void call(const char* what, Fn Ops::*fn, Args&&... args) const {
    strata_error err = new_error();
    const strata_status status = (ops_->*fn)(self_, std::forward<Args>(args)..., &err);
    if (status != STRATA_OK) throw Error(status, label_ + ": " + what + ": " + err.message);
  }

  // Forgets the instance without destroying it: for a comm stratum whose teardown (MPI_Finalize)
  // would wait forever for ranks that are not coming.
  void abandon() { self_ = nullptr; }

  const Ops& ops() const { return *ops_; }
  void* self() const { return self_; }
  const LoadedPlugin& library() const { return library_; }
  const char* name() const { return library_.descriptor().name; }
  const std::string& label() const { return label_; }  // "comm plugin 'allreduce-mpi'"

  static strata_error new_error() {
    strata_error err{};
    err.struct_size = sizeof(err);
    return err;
  }

 private:
  // Declared before self_ so the library is unloaded only after destroy(self) ran.
  LoadedPlugin library_;
  // The table calls go through (ops_ points here): a 1.0-1.2 plugin's adapter table, or a copy of
  // the plugin's own table with the members past its header.struct_size NULL.
  Ops table_{};
  const Ops* ops_ = nullptr;
  void* self_ = nullptr;
  std::string label_;
};

}  // namespace strata::rt
