// What the compatibility plugins share. They are compiled three times (tests/abi/compat/
// CMakeLists.txt): against the frozen plugin_api.h (plugin-api/legacy, which the include path puts
// first) as release 1.0 and as release 1.2, and against today's. Only plugin_api.h is used — the SDK's plugin.hpp needs today's header — so the same
// source builds against every header; COMPAT_TABLES says which table layout this build has.
#pragma once

#include <strata/plugin_api.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#ifdef STRATA_ABI_MINOR_TABLES
#define COMPAT_TABLES 1 /* ABI 1.3+: ops header, create args, args structs */
#else
#define COMPAT_TABLES 0 /* ABI 1.0-1.2: struct_size first, positional calls */
#endif

#define COMPAT_EXPORT extern "C" __attribute__((visibility("default")))

namespace compat {

struct Failure : std::runtime_error {
  Failure(strata_status c, const std::string& m) : std::runtime_error(m), code(c) {}
  strata_status code;
};

[[noreturn]] inline void fail(strata_status code, const std::string& message) {
  throw Failure(code, message);
}

inline strata_status set_error(strata_error* err, strata_status code, const char* message) {
  if (err != nullptr && err->struct_size >= sizeof(strata_error)) {
    err->code = code;
    std::snprintf(err->message, sizeof err->message, "%s", message);
  }
  return code;
}

template <class Body>
strata_status guard(strata_error* err, Body&& body) noexcept {
  try {
    body();
    return STRATA_OK;
  } catch (const Failure& f) {
    return set_error(err, f.code, f.what());
  } catch (const std::exception& e) {
    return set_error(err, STRATA_ERR_INTERNAL, e.what());
  } catch (...) {
    return set_error(err, STRATA_ERR_INTERNAL, "unknown exception");
  }
}

inline void log(const strata_host_api* host, int32_t level, const char* format, ...) {
  if (host == nullptr || host->log == nullptr) return;
  char line[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(line, sizeof line, format, args);
  va_end(args);
  host->log(host->host_ctx, level, line);
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

// "1.0", "1.2", "1.4": the header this build was compiled against.
inline const char* built_with() {
#define COMPAT_STR2(x) #x
#define COMPAT_STR(x) COMPAT_STR2(x)
  return COMPAT_STR(STRATA_ABI_MAJOR) "." COMPAT_STR(STRATA_ABI_MINOR);
}

}  // namespace compat

// The descriptor's minor: the header's minor before 1.3 (it was a floor equal to the header),
// the first minor with today's tables after. COMPAT_RUNTIME_MINOR(host): the host table's minor,
// whose field today's header calls runtime_minor and the frozen ones abi_minor (the same offset).
#if COMPAT_TABLES
#define COMPAT_RUNTIME_MINOR(host) ((host)->runtime_minor)
#else
#define COMPAT_RUNTIME_MINOR(host) ((host)->abi_minor)
#endif
#if COMPAT_TABLES
#define COMPAT_DESCRIPTOR_MINOR STRATA_ABI_MINOR_TABLES
#define COMPAT_OPS_HEADER(ops_type, kind) STRATA_OPS_HEADER(ops_type, kind),
#else
#define COMPAT_DESCRIPTOR_MINOR STRATA_ABI_MINOR
#define COMPAT_OPS_HEADER(ops_type, kind) sizeof(ops_type),
#endif

// ABI 1.6 appended checkpoint functions to the precision and offload tables; these plugins have
// none (NULL: the runtime refuses to checkpoint their optimizer state, and has no scaler to save).
// ABI 1.8 appended the parameter store to the offload table; none here either.
#if COMPAT_TABLES && STRATA_ABI_MINOR >= 8
#define COMPAT_PRECISION_CHECKPOINTS , nullptr, nullptr
#define COMPAT_OFFLOAD_CHECKPOINTS , nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr
#elif COMPAT_TABLES && STRATA_ABI_MINOR >= 6
#define COMPAT_PRECISION_CHECKPOINTS , nullptr, nullptr
#define COMPAT_OFFLOAD_CHECKPOINTS , nullptr, nullptr, nullptr, nullptr, nullptr
#else
#define COMPAT_PRECISION_CHECKPOINTS
#define COMPAT_OFFLOAD_CHECKPOINTS
#endif

// create() in this build's signature, forwarding to `impl(config_json, host, self, err)`.
#if COMPAT_TABLES
#define COMPAT_CREATE(impl)                                                                     \
  strata_status create(const strata_plugin_create_args* args, void** self, strata_error* err) { \
    if (args == nullptr || !STRATA_STRUCT_HAS(args, strata_plugin_create_args, host)) {         \
      return compat::set_error(err, STRATA_ERR_ABI, "create: args too small");                  \
    }                                                                                           \
    return impl(args->config_json != nullptr ? args->config_json : "{}", args->host, self, err); \
  }
#else
#define COMPAT_CREATE(impl)                                                                   \
  strata_status create(const char* config_json, const strata_host_api* host, void** self,     \
                       strata_error* err) {                                                   \
    return impl(config_json, host, self, err);                                                \
  }
#endif

// The entry point; `ops` is the table, `kind` its STRATA_PLUGIN_*.
#define COMPAT_ENTRY(ops, kind, name, description)                                        \
  COMPAT_EXPORT const strata_plugin_descriptor* strata_plugin_entry_v1(void) {            \
    static const strata_plugin_descriptor descriptor = {                                  \
        sizeof(strata_plugin_descriptor), STRATA_ABI_MAJOR, COMPAT_DESCRIPTOR_MINOR, kind, \
        name, compat::built_with(), description, &ops};                                   \
    return &descriptor;                                                                   \
  }

// The build system's promise that this build sees the header it means to (plugin-api/legacy first
// on the include path, STRATA_LEGACY_ABI_MINOR the release).
#ifdef COMPAT_EXPECT_MINOR
static_assert(STRATA_ABI_MINOR == COMPAT_EXPECT_MINOR, "compiled against the wrong plugin_api.h");
#endif
