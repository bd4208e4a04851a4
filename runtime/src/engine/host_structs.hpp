// The host API's versioned structs (strata.h, and strata_error / strata_param_desc from
// plugin_api.h): the size each had when it was first released. A host passes any struct_size from
// that size up (API 1.3): older hosts give a smaller struct than today's, newer hosts a larger
// one. The runtime reads and writes only the fields inside the struct_size it was given; below the
// first released size it answers STRATA_ERR_ABI, naming the struct and both sizes.
#pragma once

#include "error.hpp"

#include <strata/strata.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

namespace strata::rt {

// The size a struct had in the release named by `since` (strata.h's and plugin_api.h's
// STRATA_<NAME>_SIZE_1_<m> macros).
template <class T>
struct HostStruct;

#define STRATA_HOST_STRUCT(type, size, release)           \
  template <>                                             \
  struct HostStruct<type> {                               \
    static constexpr const char* name = #type;            \
    static constexpr const char* since = release;         \
    static constexpr size_t first_size = (size);          \
  }

STRATA_HOST_STRUCT(strata_create_options, STRATA_CREATE_OPTIONS_SIZE_1_0, "1.0");
STRATA_HOST_STRUCT(strata_world_info, STRATA_WORLD_INFO_SIZE_1_0, "1.0");
STRATA_HOST_STRUCT(strata_training_info, STRATA_TRAINING_INFO_SIZE_1_0, "1.0");
STRATA_HOST_STRUCT(strata_step_result, STRATA_STEP_RESULT_SIZE_1_0, "1.0");
STRATA_HOST_STRUCT(strata_memory_report, STRATA_MEMORY_REPORT_SIZE_1_0, "1.0");
STRATA_HOST_STRUCT(strata_param_desc, STRATA_PARAM_DESC_SIZE_1_0, "1.0");
STRATA_HOST_STRUCT(strata_param_view, STRATA_PARAM_VIEW_SIZE_1_1, "1.1");
STRATA_HOST_STRUCT(strata_error, STRATA_ERROR_SIZE_1_0, "1.0");
STRATA_HOST_STRUCT(strata_save_args, STRATA_SAVE_ARGS_SIZE_1_6, "1.6");
STRATA_HOST_STRUCT(strata_load_args, STRATA_LOAD_ARGS_SIZE_1_6, "1.6");
STRATA_HOST_STRUCT(strata_load_result, STRATA_LOAD_RESULT_SIZE_1_6, "1.6");

#undef STRATA_HOST_STRUCT

// The sentence for a struct_size below the first released size, or "".
template <class T>
std::string host_struct_problem(size_t struct_size, const char* call) {
  using S = HostStruct<T>;
  if (struct_size >= S::first_size) return {};
  return std::string(call) + ": " + S::name + ".struct_size " + std::to_string(struct_size) +
         " is smaller than " + std::to_string(S::first_size) + ", its size in API " + S::since +
         " (the first release with it); set struct_size = sizeof(" + S::name + ")";
}

// Throws Error(STRATA_ERR_ABI) when `struct_size` is below T's first released size.
template <class T>
void check_host_struct(size_t struct_size, const char* call) {
  const std::string problem = host_struct_problem<T>(struct_size, call);
  if (!problem.empty()) throw Error(STRATA_ERR_ABI, problem);
}

// A caller's input struct as this runtime's full struct: the fields past its struct_size (an older
// host's) read as zero. struct_size keeps the caller's value. Call after check_host_struct.
template <class T>
T read_host_struct(const T& in) {
  T out{};
  std::memcpy(&out, &in, std::min(in.struct_size, sizeof(T)));
  return out;
}

}  // namespace strata::rt
