// strata/plugin.hpp — header-only helpers for plugin authors (C++17 or later).
//
// A plugin is C++ inside and C at the boundary. These helpers keep exceptions from crossing it
// (guard), write error records (set_error), and wrap the host-services table (Host).
#pragma once

#include <strata/plugin_api.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>

// Put before the definition of strata_plugin_entry_v1. The SDK's strata_add_plugin() also applies a
// linker version script so that this is the only dynamic symbol the library exports.
#define STRATA_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

namespace strata::sdk {

// Thrown inside a plugin; guard() turns it into a status code and message.
class Error : public std::runtime_error {
 public:
  Error(strata_status code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  strata_status code() const noexcept { return code_; }

 private:
  strata_status code_;
};

[[noreturn]] inline void fail(strata_status code, const std::string& message) {
  throw Error(code, message);
}

inline strata_status set_error(strata_error* err, strata_status code, std::string_view message) {
  if (err != nullptr && err->struct_size >= sizeof(strata_error)) {
    err->code = code;
    const size_t n = std::min(message.size(), sizeof(err->message) - 1);
    std::memcpy(err->message, message.data(), n);
    err->message[n] = '\0';
  }
  return code;
}

// Runs `body` and converts any exception into a status plus message. Use it as the whole body of
// every function in an ops table.
template <class Body>
strata_status guard(strata_error* err, Body&& body) noexcept {
  try {
    body();
    return STRATA_OK;
  } catch (const Error& e) {
    return set_error(err, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return set_error(err, STRATA_ERR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return set_error(err, STRATA_ERR_INTERNAL, e.what());
  } catch (...) {
    return set_error(err, STRATA_ERR_INTERNAL, "unknown exception");
  }
}

// Throws Error if a call into another stratum (through the host table) failed.
inline void check(strata_status status, const strata_error& err, std::string_view what) {
  if (status != STRATA_OK) {
    fail(status, std::string(what) + ": " + err.message);
  }
}

// Arrays cross the ABI as pointer + count (shard lists, counts); NULL is only valid when empty.
inline void require_array(const void* items, size_t count, const char* what) {
  if (items == nullptr && count > 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT, std::string(what) + ": NULL with count " + std::to_string(count));
  }
}

inline strata_error make_error() {
  strata_error e{};
  e.struct_size = sizeof(strata_error);
  return e;
}

inline size_t dtype_size(int32_t dtype) {
  switch (dtype) {
    case STRATA_F32: case STRATA_I32: return 4;
    case STRATA_F16: case STRATA_BF16: return 2;
    case STRATA_F64: case STRATA_I64: return 8;
    case STRATA_U8: return 1;
    default: return 0;
  }
}

inline const char* dtype_name(int32_t dtype) {
  switch (dtype) {
    case STRATA_F32: return "f32";
    case STRATA_F16: return "f16";
    case STRATA_BF16: return "bf16";
    case STRATA_F64: return "f64";
    case STRATA_I32: return "i32";
    case STRATA_I64: return "i64";
    case STRATA_U8: return "u8";
    default: return "unknown-dtype";
  }
}

inline strata_buffer host_buffer(void* data, uint64_t count, int32_t dtype) {
  strata_buffer b{};
  b.struct_size = sizeof(strata_buffer);
  b.data = data;
  b.count = count;
  b.dtype = dtype;
  b.device = strata_device{STRATA_DEVICE_HOST, 0};
  return b;
}

// Thin view of the host-services table handed to create(). Not owning; copy freely.
class Host {
 public:
  Host() = default;
  explicit Host(const strata_host_api* api) : api_(api) {
    if (api_ == nullptr || api_->struct_size < offsetof(strata_host_api, comm)) {
      fail(STRATA_ERR_ABI, "host-services table missing or too small");
    }
  }
  const strata_host_api* raw() const { return api_; }

  void log(strata_log_level level, const char* fmt, ...) const __attribute__((format(printf, 3, 4))) {
    char line[1024];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(line, sizeof line, fmt, args);
    va_end(args);
    api_->log(api_->host_ctx, level, line);
  }

  void* alloc(size_t bytes, strata_mem_category category, size_t alignment = 64) const {
    void* p = api_->alloc_bytes(api_->host_ctx, bytes, alignment, category);
    if (p == nullptr && bytes != 0) {
      fail(STRATA_ERR_OUT_OF_MEMORY,
           "could not allocate " + std::to_string(bytes) + " bytes");
    }
    return p;
  }
  void free(void* p) const { api_->free_bytes(api_->host_ctx, p); }

  // ABI 1.2 hosts can place memory and account disk bytes; older hosts cannot.
  bool has_locations() const {
    return STRATA_STRUCT_HAS(api_, strata_host_api, account_bytes) &&
           api_->alloc_bytes_at != nullptr && api_->account_bytes != nullptr;
  }
  // Page-locked accounted memory, or nullptr when the host is older than 1.2 or the system refuses
  // to lock the pages (the caller decides whether to fall back to alloc()).
  void* try_alloc_pinned(size_t bytes, strata_mem_category category, size_t alignment = 64) const {
    if (!has_locations()) return nullptr;
    return api_->alloc_bytes_at(api_->host_ctx, bytes, alignment, category,
                                STRATA_MEM_HOST_PINNED);
  }
  // Records bytes held outside the allocator (files); a no-op on hosts older than 1.2.
  void account(strata_mem_category category, strata_mem_location location, int64_t delta) const {
    if (has_locations()) api_->account_bytes(api_->host_ctx, category, location, delta);
  }

  // The comm stratum, or throws if this plugin was created without one.
  const strata_comm_ops& comm() const {
    if (api_->comm == nullptr) fail(STRATA_ERR_UNSUPPORTED, "no comm stratum available");
    return *api_->comm;
  }
  void* comm_self() const { return api_->comm_self; }
  const strata_precision_ops* precision() const { return api_->precision; }
  void* precision_self() const { return api_->precision_self; }

 private:
  const strata_host_api* api_ = nullptr;
};

// An accounted, aligned, zero-initialised array freed through the host table (RAII).
template <class T>
class HostArray {
 public:
  HostArray() = default;
  HostArray(const Host& host, size_t count, strata_mem_category category)
      : host_(host), count_(count) {
    data_ = static_cast<T*>(host_.alloc(count * sizeof(T), category));
    if (data_ != nullptr) std::memset(static_cast<void*>(data_), 0, count * sizeof(T));
  }
  HostArray(const HostArray&) = delete;
  HostArray& operator=(const HostArray&) = delete;
  HostArray(HostArray&& o) noexcept { swap(o); }
  HostArray& operator=(HostArray&& o) noexcept {
    HostArray tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~HostArray() {
    if (data_ != nullptr) host_.free(data_);
  }
  T* data() const { return data_; }
  size_t size() const { return count_; }
  T& operator[](size_t i) const { return data_[i]; }

 private:
  void swap(HostArray& o) noexcept {
    std::swap(host_, o.host_);
    std::swap(data_, o.data_);
    std::swap(count_, o.count_);
  }
  Host host_;
  T* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace strata::sdk
