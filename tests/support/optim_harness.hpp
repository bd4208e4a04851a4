// Shared test helpers for the offload and precision plugins: load each plugin once, own an
// instance for the length of a test, keep fp32 shards in std::vectors, and give NVMe tests a
// scratch folder.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <strata/plugin.hpp>
#include <string>
#include <vector>

#include "plugin_harness.hpp"

namespace strata::test {

// A fresh empty directory for one test's files, removed afterwards (writable again first, for
// tests that take the write permission away).
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "strata-offload-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~ScratchDir() {
    ::chmod(path_.c_str(), 0700);
    std::filesystem::remove_all(path_);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  size_t entries() const {
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(path_), {}));
  }

 private:
  std::string path_;
};

// Each plugin exists for a test executable that names its path (tests/plugins/offload, .../amp).
#ifdef STRATA_OFFLOAD_PLUGIN_PATH
inline const PluginLibrary& offload_library() {
  static const PluginLibrary library(STRATA_OFFLOAD_PLUGIN_PATH);
  return library;
}
inline const strata_offload_ops& offload_ops() {
  return offload_library().ops<strata_offload_ops>();
}
#endif
#ifdef STRATA_AMP_PLUGIN_PATH
inline const PluginLibrary& amp_library() {
  static const PluginLibrary library(STRATA_AMP_PLUGIN_PATH);
  return library;
}
inline const strata_precision_ops& amp_ops() { return amp_library().ops<strata_precision_ops>(); }
#endif

// One plugin instance created from `config`; create()'s status and message are kept for tests
// that expect it to fail. Destroyed with the object.
template <class Ops>
class Instance {
 public:
  Instance(const Ops& ops, FakeHost& host, const std::string& config)
      : Instance(ops, host.api(), config) {}
  // A host table of the test's own (a FakeHost's services with some entries replaced, say).
  Instance(const Ops& ops, const strata_host_api* host, const std::string& config) : ops_(ops) {
    strata_error err = sdk::make_error();
    strata_plugin_create_args args{};
    args.struct_size = sizeof(args);
    args.config_json = config.c_str();
    args.host = host;
    status_ = ops_.create(&args, &self_, &err);
    if (status_ != STRATA_OK) message_ = err.message;
  }
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;
  ~Instance() {
    if (self_ != nullptr) ops_.destroy(self_);
  }
  strata_status status() const { return status_; }
  const std::string& message() const { return message_; }
  void* self() const { return self_; }
  const Ops& ops() const { return ops_; }

 private:
  const Ops& ops_;
  void* self_ = nullptr;
  strata_status status_ = STRATA_ERR_INTERNAL;
  std::string message_;
};

// fp32 master and gradient storage for a list of shards, laid out as a sharding plugin would
// hand them over: several parameters, each cut into ranges of the given sizes.
class ShardSet {
 public:
  // sizes[i] is shard i's element count; consecutive pairs of shards belong to one parameter.
  explicit ShardSet(const std::vector<uint64_t>& sizes)
      : master_(sizes.size()), grad_(sizes.size()) {
    uint64_t offset = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (i % 2 == 0) offset = 0;
      master_[i].assign(sizes[i], 0.0f);
      grad_[i].assign(sizes[i], 0.0f);
      strata_shard s{};
      s.struct_size = sizeof(strata_shard);
      s.param_index = static_cast<uint32_t>(i / 2);
      s.offset = offset;
      s.count = sizes[i];
      s.master = master_[i].data();
      s.grad = grad_[i].data();
      shards_.push_back(s);
      offset += sizes[i];
    }
  }
  ShardSet(const ShardSet&) = delete;
  ShardSet& operator=(const ShardSet&) = delete;

  const strata_shard* data() const { return shards_.data(); }
  size_t size() const { return shards_.size(); }
  std::vector<float>& master(size_t i) { return master_[i]; }
  std::vector<float>& grad(size_t i) { return grad_[i]; }
  uint64_t elements() const {
    uint64_t n = 0;
    for (const auto& s : shards_) n += s.count;
    return n;
  }

 private:
  std::vector<std::vector<float>> master_;
  std::vector<std::vector<float>> grad_;
  std::vector<strata_shard> shards_;
};

}  // namespace strata::test
