// The plugin ABI minor this runtime reports: to the loader's floor check and in every
// host-services table it lends.
#pragma once

#include <strata/plugin_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace strata::rt {

// The environment variable that makes the runtime behave as an older minor (a testing aid).
inline constexpr const char* kEmulateAbiMinorVariable = "STRATA_EMULATE_ABI_MINOR";

// STRATA_ABI_MINOR, or the value of STRATA_EMULATE_ABI_MINOR when set.
//
// STRATA_EMULATE_ABI_MINOR is a testing aid for plugin authors: set to an integer from
// STRATA_ABI_MINOR_TABLES (3) to STRATA_ABI_MINOR, it makes this runtime behave as a runtime of
// that older minor would: plugins whose floor (min_runtime_minor) is above it are refused, and
// the host-services tables it lends report that minor and have that minor's struct_size, so the
// services of later minors are absent (at 3: no log_enabled). A plugin author runs the plugin's
// tests under it to check that the plugin keeps its floor. Any other value is an error
// (STRATA_ERR_INVALID_ARGUMENT) naming the variable and the accepted range. Read at each call.
uint32_t runtime_abi_minor();

// "1.4", or "1.3 (emulated: STRATA_EMULATE_ABI_MINOR=3)" under emulation: for messages.
std::string runtime_abi_text();

// strata_host_api's struct_size as a runtime of ABI 1.`minor` fills it (minor >= 3): 1.3 added no
// host service, 1.4 appended log_enabled, 1.5 trace_enabled and trace_span, 1.7 device and
// cuda_stream, 1.8 offload and offload_self.
constexpr size_t host_api_size(uint32_t minor) {
  if (minor < 4) return STRATA_HOST_API_SIZE_1_2;
  if (minor < 5) return STRATA_HOST_API_SIZE_1_4;
  if (minor < 7) return STRATA_HOST_API_SIZE_1_5;
  if (minor < 8) return STRATA_HOST_API_SIZE_1_7;
  return STRATA_HOST_API_SIZE_1_8;
}
static_assert(host_api_size(STRATA_ABI_MINOR) == sizeof(strata_host_api),
              "a host service was appended: give its minor a size in host_api_size");

}  // namespace strata::rt
