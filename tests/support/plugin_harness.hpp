// Test-only harness: loads one plugin library by path with dlopen and hands it a minimal
// host-services table (malloc-backed accounting, stderr logging). Lets plugin tests and benchmarks
// exercise a plugin directly, without libstrata, as a third-party host would.
#pragma once

#include <strata/plugin.hpp>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

namespace strata::test {

class PluginLibrary {
 public:
  explicit PluginLibrary(const std::string& path) {
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) throw std::runtime_error(std::string("dlopen: ") + dlerror());
    auto entry = reinterpret_cast<strata_plugin_entry_fn>(dlsym(handle_, STRATA_PLUGIN_ENTRY_SYMBOL));
    if (entry == nullptr) throw std::runtime_error(path + ": no " STRATA_PLUGIN_ENTRY_SYMBOL);
    descriptor_ = entry();
  }
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;
  // Deliberately not dlclose'd: MPI and OpenMP keep threads and handlers inside the library.
  ~PluginLibrary() = default;

  const strata_plugin_descriptor& descriptor() const { return *descriptor_; }
  template <class Ops>
  const Ops& ops() const { return *static_cast<const Ops*>(descriptor_->ops); }

 private:
  void* handle_ = nullptr;
  const strata_plugin_descriptor* descriptor_ = nullptr;
};

// A host-services table whose allocations are counted per category.
class FakeHost {
 public:
  FakeHost() {
    api_.struct_size = sizeof(api_);
    api_.abi_major = STRATA_ABI_MAJOR;
    api_.abi_minor = STRATA_ABI_MINOR;
    api_.host_ctx = this;
    api_.log = [](void*, int32_t level, const char* msg) {
      if (level >= STRATA_LOG_WARN) std::fprintf(stderr, "[plugin] %s\n", msg);
    };
    api_.alloc_bytes = [](void* ctx, size_t bytes, size_t alignment, int32_t category) -> void* {
      auto* self = static_cast<FakeHost*>(ctx);
      if (alignment < sizeof(void*)) alignment = sizeof(void*);
      size_t rounded = (bytes + alignment - 1) / alignment * alignment;
      void* p = std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
      if (p == nullptr) return nullptr;
      std::lock_guard<std::mutex> lock(self->mutex_);
      self->live_[p] = {bytes, category};
      self->bytes_[category] += bytes;
      return p;
    };
    api_.free_bytes = [](void* ctx, void* p) {
      if (p == nullptr) return;
      auto* self = static_cast<FakeHost*>(ctx);
      {
        std::lock_guard<std::mutex> lock(self->mutex_);
        auto it = self->live_.find(p);
        if (it != self->live_.end()) {
          self->bytes_[it->second.second] -= it->second.first;
          self->live_.erase(it);
        }
      }
      std::free(p);
    };
  }
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  strata_host_api* api() { return &api_; }
  void set_comm(const strata_comm_ops* ops, void* self) { api_.comm = ops; api_.comm_self = self; }
  void set_precision(const strata_precision_ops* ops, void* self) {
    api_.precision = ops;
    api_.precision_self = self;
  }
  size_t bytes(strata_mem_category c) {
    std::lock_guard<std::mutex> lock(mutex_);
    return bytes_[c];
  }

 private:
  strata_host_api api_{};
  std::mutex mutex_;
  std::map<void*, std::pair<size_t, int32_t>> live_;
  size_t bytes_[STRATA_MEM_CATEGORY_COUNT] = {};
};

}  // namespace strata::test
