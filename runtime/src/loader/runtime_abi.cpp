#include "loader/runtime_abi.hpp"

#include "error.hpp"

#include <cerrno>
#include <cstdlib>
#include <string>

namespace strata::rt {

uint32_t runtime_abi_minor() {
  const char* value = std::getenv(kEmulateAbiMinorVariable);
  if (value == nullptr) return STRATA_ABI_MINOR;
  errno = 0;
  char* end = nullptr;
  const long parsed = std::strtol(value, &end, 10);
  if (*value == '\0' || end == value || *end != '\0' || errno != 0 ||
      parsed < STRATA_ABI_MINOR_TABLES || parsed > STRATA_ABI_MINOR) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                std::string(kEmulateAbiMinorVariable) + ": expected an integer from " +
                    std::to_string(STRATA_ABI_MINOR_TABLES) + " to " +
                    std::to_string(STRATA_ABI_MINOR) + " (the ABI 1.x minor to emulate), got '" +
                    value + "'");
  }
  return static_cast<uint32_t>(parsed);
}

std::string runtime_abi_text() {
  const uint32_t minor = runtime_abi_minor();
  std::string text = std::to_string(STRATA_ABI_MAJOR) + "." + std::to_string(minor);
  if (minor != STRATA_ABI_MINOR) {
    text += std::string(" (emulated: ") + kEmulateAbiMinorVariable + "=" + std::to_string(minor) + ")";
  }
  return text;
}

}  // namespace strata::rt
