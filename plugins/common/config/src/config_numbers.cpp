#include <strata_common/config_numbers.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

namespace strata::common::config {

std::optional<double> number_in(const nlohmann::json& value, NumberStrings strings) {
  if (value.is_number()) return value.get<double>();
  if (!value.is_string() || strings == NumberStrings::refused) return std::nullopt;
  const std::string& text = value.get_ref<const std::string&>();
  char* end = nullptr;
  const double d = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) return std::nullopt;
  return d;
}

std::optional<int64_t> whole_number_in(const nlohmann::json& value, NumberStrings strings) {
  if (value.is_number_unsigned()) {
    // Read exactly, not through a double (which holds integers exactly only up to 2^53).
    if (value.get<uint64_t>() > uint64_t{INT64_MAX}) return std::nullopt;
    return static_cast<int64_t>(value.get<uint64_t>());
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  const std::optional<double> d = number_in(value, strings);
  // [-2^63, 2^63): the doubles that convert to int64 without overflow.
  if (!d || !std::isfinite(*d) || *d != std::trunc(*d) || *d < -0x1p63 || *d >= 0x1p63) {
    return std::nullopt;
  }
  return static_cast<int64_t>(*d);
}

}  // namespace strata::common::config
