// A minimal host for calling one plugin library directly, without libstrata, as a third-party
// host would: the library loaded by path, and a host-services table whose allocations are
// counted. strata-plugin-check drives comm, precision and offload plugins through it; the
// project's plugin tests and benchmarks use it too (tests/support/plugin_harness.hpp).
#pragma once

#include <strata/plugin.hpp>

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

namespace strata::plugin_check {

// dlopen()s a plugin library (RTLD_NOW | RTLD_LOCAL) and reads its descriptor. Throws
// std::runtime_error naming the file when it cannot be loaded or has no entry symbol.
class PluginLibrary {
 public:
  explicit PluginLibrary(const std::string& path) {
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) throw std::runtime_error(path + ": " + dlerror());
    auto entry = reinterpret_cast<strata_plugin_entry_fn>(dlsym(handle_, STRATA_PLUGIN_ENTRY_SYMBOL));
    if (entry == nullptr) {
      throw std::runtime_error(path + ": not a Strata plugin (it exports no " +
                               STRATA_PLUGIN_ENTRY_SYMBOL + ")");
    }
    descriptor_ = entry();
  }
  PluginLibrary(const PluginLibrary&) = delete;
  PluginLibrary& operator=(const PluginLibrary&) = delete;
  // Deliberately not dlclose'd: MPI and OpenMP keep threads and handlers inside the library.
  ~PluginLibrary() = default;

  const strata_plugin_descriptor& descriptor() const { return *descriptor_; }
  template <class Ops>
  const Ops& ops() const { return *static_cast<const Ops*>(descriptor_->ops); }

  // Creates an instance of the library's `Ops` with `config_json` and `host`; returns the plugin's
  // status (and *self on success).
  template <class Ops>
  strata_status create(const char* config_json, const strata_host_api* host, void** self,
                       strata_error* err) const {
    strata_plugin_create_args args{};
    args.struct_size = sizeof(args);
    args.config_json = config_json;
    args.host = host;
    return ops<Ops>().create(&args, self, err);
  }

 private:
  void* handle_ = nullptr;
  const strata_plugin_descriptor* descriptor_ = nullptr;
};

// A host-services table (ABI 1.4) whose allocations are counted per category and location:
// pinned allocations are really page-locked with mlock, so a plugin's fallback path runs when the
// system refuses, just as under the runtime.
class PluginHost {
 public:
  PluginHost() {
    api_.struct_size = sizeof(api_);
    api_.abi_major = STRATA_ABI_MAJOR;
    api_.runtime_minor = STRATA_ABI_MINOR;
    api_.host_ctx = this;
    api_.log = [](void*, int32_t level, const char* msg) {
      if (level >= STRATA_LOG_WARN) std::fprintf(stderr, "[plugin] %s\n", msg);
    };
    api_.alloc_bytes = [](void* ctx, size_t bytes, size_t alignment, int32_t category) -> void* {
      return static_cast<PluginHost*>(ctx)->allocate(bytes, alignment, category, STRATA_MEM_HOST);
    };
    api_.free_bytes = [](void* ctx, void* p) { static_cast<PluginHost*>(ctx)->release(p); };
    // Every level: tests that swap in their own `log` read info and debug lines too.
    api_.log_enabled = [](void*, int32_t) -> int32_t { return 1; };
    api_.alloc_bytes_at = [](void* ctx, size_t bytes, size_t alignment, int32_t category,
                             int32_t location) -> void* {
      return static_cast<PluginHost*>(ctx)->allocate(bytes, alignment, category, location);
    };
    api_.account_bytes = [](void* ctx, int32_t category, int32_t location, int64_t delta) {
      auto* self = static_cast<PluginHost*>(ctx);
      if (category < 0 || category >= STRATA_MEM_CATEGORY_COUNT || location < 0 ||
          location >= STRATA_MEM_LOCATION_COUNT) {
        std::fprintf(stderr, "[host] account_bytes: invalid category %d or location %d\n",
                     static_cast<int>(category), static_cast<int>(location));
        return;
      }
      std::lock_guard<std::mutex> lock(self->mutex_);
      self->located_[location][category] += static_cast<uint64_t>(delta);  // wraps on misuse
      // Memory a plugin maps itself and accounts here counts toward the peak, as the runtime's
      // ledger counts it.
      if (delta > 0) self->watched_peak_ = std::max(self->watched_peak_, self->watched_now());
    };
  }
  PluginHost(const PluginHost&) = delete;
  PluginHost& operator=(const PluginHost&) = delete;

  strata_host_api* api() { return &api_; }
  // From now on host services device() and cuda_stream() (ABI 1.7) answer `device` and `stream`
  // (a cudaStream_t), as the runtime answers in a job whose parameters are on that device and
  // whose host set that stream. Until then both functions are NULL: host memory, the legacy
  // default stream. Call it between plugin calls, not during one.
  void set_cuda_device(strata_device device, void* stream) {
    cuda_device_ = device;
    cuda_stream_ = stream;
    api_.device = [](void* ctx) { return static_cast<PluginHost*>(ctx)->cuda_device_; };
    api_.cuda_stream = [](void* ctx) { return static_cast<PluginHost*>(ctx)->cuda_stream_; };
  }
  void set_comm(const strata_comm_ops* ops, void* self) { api_.comm = ops; api_.comm_self = self; }
  void set_precision(const strata_precision_ops* ops, void* self) {
    api_.precision = ops;
    api_.precision_self = self;
  }
  // Memory (host and pinned) held in category c; disk is not memory.
  size_t bytes(strata_mem_category c) {
    std::lock_guard<std::mutex> lock(mutex_);
    return located_[STRATA_MEM_HOST][c] + located_[STRATA_MEM_HOST_PINNED][c] +
           located_[STRATA_MEM_DEVICE][c];
  }
  // Bytes held in category c at location l, disk included.
  uint64_t located(strata_mem_location l, strata_mem_category c) {
    std::lock_guard<std::mutex> lock(mutex_);
    return located_[l][c];
  }
  // From now on, the largest memory the categories in `mask` (bit c: category c) held together
  // at any moment, as of each allocation (watched_peak()).
  void watch_peak(uint32_t mask) {
    std::lock_guard<std::mutex> lock(mutex_);
    watch_mask_ = mask;
    watched_peak_ = watched_now();
  }
  size_t watched_peak() {
    std::lock_guard<std::mutex> lock(mutex_);
    return watched_peak_;
  }
  // Allocations made so far (every category and location).
  size_t allocations() {
    std::lock_guard<std::mutex> lock(mutex_);
    return allocations_;
  }

 private:
  struct Allocation {
    size_t bytes;
    size_t rounded;
    int32_t category;
    int32_t location;
  };

  void* allocate(size_t bytes, size_t alignment, int32_t category, int32_t location) {
    if (category < 0 || category >= STRATA_MEM_CATEGORY_COUNT) return nullptr;
    if (location != STRATA_MEM_HOST && location != STRATA_MEM_HOST_PINNED) return nullptr;
    const bool pinned = location == STRATA_MEM_HOST_PINNED;
    if (alignment < sizeof(void*)) alignment = sizeof(void*);
    // Locks do not nest, so pinned blocks own whole pages (see the runtime's MemoryLedger).
    if (pinned && alignment < static_cast<size_t>(sysconf(_SC_PAGESIZE))) {
      alignment = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    }
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    if (rounded == 0) rounded = alignment;
    void* p = std::aligned_alloc(alignment, rounded);
    if (p == nullptr) return nullptr;
    if (pinned && mlock(p, rounded) != 0) {
      const int why = errno;  // the caller may report why the pages could not be locked
      std::free(p);
      errno = why;
      return nullptr;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    live_[p] = {bytes, rounded, category, location};
    located_[location][category] += bytes;
    watched_peak_ = std::max(watched_peak_, watched_now());
    ++allocations_;
    return p;
  }

  void release(void* p) {
    if (p == nullptr) return;
    Allocation a{};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = live_.find(p);
      if (it != live_.end()) {
        a = it->second;
        located_[a.location][a.category] -= a.bytes;
        live_.erase(it);
      }
    }
    // An unknown pointer is freed all the same, so that a double free shows under ASan.
    if (a.location == STRATA_MEM_HOST_PINNED) munlock(p, a.rounded);
    std::free(p);
  }

  size_t watched_now() const {  // caller holds mutex_
    size_t sum = 0;
    for (int c = 0; c < STRATA_MEM_CATEGORY_COUNT; ++c) {
      if ((watch_mask_ & (1u << c)) == 0) continue;
      for (int l = STRATA_MEM_HOST; l <= STRATA_MEM_DEVICE; ++l) sum += located_[l][c];
    }
    return sum;
  }

  strata_host_api api_{};
  strata_device cuda_device_{STRATA_DEVICE_HOST, 0};
  void* cuda_stream_ = nullptr;
  std::mutex mutex_;
  uint32_t watch_mask_ = 0;
  size_t watched_peak_ = 0;
  size_t allocations_ = 0;
  std::map<void*, Allocation> live_;
  uint64_t located_[STRATA_MEM_LOCATION_COUNT][STRATA_MEM_CATEGORY_COUNT] = {};
};

}  // namespace strata::plugin_check
