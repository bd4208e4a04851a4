// The frozen ABI 1.0-1.2 plugin header (plugin-api/legacy/strata/plugin_api.h) as the C++ names
// strata::rt::legacy::v1_2::*, beside today's plugin_api.h in the global namespace, and the bridge
// between the two for the structs that ABI 1.3 did not change.
//
// Why a namespace: the adapter translates between the two layouts, so its translation units see
// both headers, which declare the same names. Included inside a namespace, the frozen header's
// structs and enums are C++ types of their own: no clash with today's, and no type defined twice
// in the program. Its macros are token for token today's (a differing redefinition would fail
// the build under -Werror), except STRATA_ABI_MINOR, which is saved and restored around it.
// (Prefixing the frozen header's names by a macro would make it unreadable and still collide on
// enum constants and macros; a half of the adapter built against the frozen header alone would
// cut every forwarding function in two.)
#pragma once

// First: the standard headers the frozen header includes are then no-ops inside the namespace.
#include <strata/plugin_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#pragma push_macro("STRATA_ABI_MINOR")
#undef STRATA_ABI_MINOR
namespace strata::rt::legacy::v1_2 {
#define STRATA_LEGACY_ABI_MINOR 2
#include <legacy/strata/plugin_api.h>
// What the host table lent to a legacy plugin says the runtime is: 1.2, the newest it knows.
inline constexpr uint32_t kHostMinor = STRATA_ABI_MINOR;
}  // namespace strata::rt::legacy::v1_2
#undef STRATA_LEGACY_ABI_MINOR
#pragma pop_macro("STRATA_ABI_MINOR")

namespace strata::rt::legacy {

// ---- sizes as each legacy minor released them (a 1.0 table is a prefix of 1.2's) ---------------

// The first minor whose strata_shard has the model copy fields: 1.0 and 1.1 arrays are shorter.
inline constexpr uint32_t kShardModelMinor = 2;

inline constexpr size_t kHostSize1_2 = sizeof(v1_2::strata_host_api);
inline constexpr size_t kCommSize1_0 = sizeof(v1_2::strata_comm_ops);  // the same in 1.0-1.2
inline constexpr size_t kShardingSize1_0 = STRATA_STRUCT_SIZE(v1_2::strata_sharding_ops, zero_grad);
inline constexpr size_t kShardingSize1_1 = sizeof(v1_2::strata_sharding_ops);  // 1.2's too
inline constexpr size_t kPrecisionSize1_0 = sizeof(v1_2::strata_precision_ops);
inline constexpr size_t kOffloadSize1_0 = sizeof(v1_2::strata_offload_ops);
inline constexpr size_t kShardSize1_0 = STRATA_STRUCT_SIZE(v1_2::strata_shard, grad);

// One element of a 1.0/1.1 plugin's shard array: the fields 1.0 had, which are the first
// kShardSize1_0 bytes of 1.2's strata_shard, so that a vector of it has 1.0's stride.
struct alignas(v1_2::strata_shard) Shard1_0 {
  unsigned char bytes[kShardSize1_0];
};
static_assert(sizeof(Shard1_0) == STRATA_SHARD_SIZE_1_0, "a 1.0 shard array's stride");

// ---- structs ABI 1.3 left as they were: today's starts with 1.2's layout ------------------------

// LegacyOf<today's>::type and TodayOf<1.2's>::type pair the two definitions of one struct. A
// pointer to either may be read as the other within the struct_size it carries; each pair is
// checked against the size that today's header says its minor released (STRATA_<NAME>_SIZE_1_x).
template <class Today>
struct LegacyOf {};
template <class Legacy>
struct TodayOf {};

#define STRATA_LEGACY_PAIR(name)                                                 \
  template <>                                                                    \
  struct LegacyOf<::name> {                                                      \
    using type = v1_2::name;                                                     \
  };                                                                             \
  template <>                                                                    \
  struct TodayOf<v1_2::name> {                                                   \
    using type = ::name;                                                         \
  }
#define STRATA_LEGACY_SAME_START(name, last_field, released_size) \
  STRATA_LEGACY_PAIR(name);                                       \
  static_assert(STRATA_STRUCT_SIZE(v1_2::name, last_field) == (released_size), \
                #name ": the frozen header and today's disagree on its released size")

STRATA_LEGACY_SAME_START(strata_error, message, STRATA_ERROR_SIZE_1_0);
STRATA_LEGACY_SAME_START(strata_buffer, device, STRATA_BUFFER_SIZE_1_0);
STRATA_LEGACY_SAME_START(strata_comm_caps, nonblocking, STRATA_COMM_CAPS_SIZE_1_0);
STRATA_LEGACY_SAME_START(strata_param_desc, grad, STRATA_PARAM_DESC_SIZE_1_0);
STRATA_LEGACY_SAME_START(strata_shard, model_dtype, STRATA_SHARD_SIZE_1_2);
// Shard arrays are read as either layout whole (the adapter reinterprets them): the stride too.
static_assert(sizeof(v1_2::strata_shard) == sizeof(strata_shard), "a shard array's stride");
STRATA_LEGACY_SAME_START(strata_param_view, dtype, STRATA_PARAM_VIEW_SIZE_1_1);
STRATA_LEGACY_SAME_START(strata_sharding_caps, shards_replicated, STRATA_SHARDING_CAPS_SIZE_1_0);
STRATA_LEGACY_SAME_START(strata_precision_caps, dynamic_scaling, STRATA_PRECISION_CAPS_SIZE_1_0);
STRATA_LEGACY_SAME_START(strata_grad_stats, sum_sq, STRATA_GRAD_STATS_SIZE_1_0);
STRATA_LEGACY_SAME_START(strata_offload_caps, writes_model_copy, STRATA_OFFLOAD_CAPS_SIZE_1_2);
STRATA_LEGACY_SAME_START(strata_step_args, lr_factor, STRATA_STEP_ARGS_SIZE_1_0);
// The frozen header's `struct strata_request_s*` names today's opaque struct (declared first), so
// request handles need no bridge.
static_assert(std::is_same_v<v1_2::strata_request, strata_request>);
// Read by the loader as today's, never converted; checked all the same.
static_assert(STRATA_STRUCT_SIZE(v1_2::strata_plugin_descriptor, ops) ==
              STRATA_PLUGIN_DESCRIPTOR_SIZE_1_0);
static_assert(kHostSize1_2 == STRATA_HOST_API_SIZE_1_2);
static_assert(kShardSize1_0 == STRATA_SHARD_SIZE_1_0);

#undef STRATA_LEGACY_SAME_START
#undef STRATA_LEGACY_PAIR

template <class T, class U>
using same_const_t = std::conditional_t<std::is_const_v<T>, const U, U>;

// Today's pointer as the frozen header's type of the same struct, and back (const kept).
template <class T, class L = typename LegacyOf<std::remove_const_t<T>>::type>
same_const_t<T, L>* as_legacy(T* p) {
  return reinterpret_cast<same_const_t<T, L>*>(p);
}
template <class T, class C = typename TodayOf<std::remove_const_t<T>>::type>
same_const_t<T, C>* as_today(T* p) {
  return reinterpret_cast<same_const_t<T, C>*>(p);
}

// Statuses cross as their numbers, which both headers give the same meaning.
inline v1_2::strata_status as_legacy(strata_status s) {
  return static_cast<v1_2::strata_status>(s);
}
inline strata_status as_today(v1_2::strata_status s) { return static_cast<strata_status>(s); }

// An argument of a call into a legacy table: pointers to the paired structs as 1.2's types,
// everything else (self, counts, flags, names, plain arrays) as it is.
template <class T>
T legacy_arg(T value) {
  return value;
}
template <class T, class = typename LegacyOf<std::remove_const_t<T>>::type>
auto* legacy_arg(T* p) {
  return as_legacy(p);
}

// Calls `fn` of a legacy table with today's arguments; its status comes back as today's.
template <class... Params, class... Args>
strata_status call(v1_2::strata_status (*fn)(Params...), Args... args) {
  return as_today(fn(legacy_arg(args)...));
}

}  // namespace strata::rt::legacy
