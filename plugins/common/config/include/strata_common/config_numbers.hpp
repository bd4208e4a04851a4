// strata_common/config_numbers.hpp — what counts as a number in a plugin's JSON config. DeepSpeed's
// config models (pydantic) coerce more than JSON's numbers, and configs rely on it: sizes written
// as 5e8 for integer fields, and in some blocks numbers written as strings ("128").
// Library strata_common_config (see config_reader.hpp, whose typed readers use these).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

namespace strata::common::config {

// Whether a string holding a number ("128", "1e-3", "inf") reads as that number, as pydantic
// coerces it (DeepSpeed's fp16 block), or is refused like any other string.
enum class NumberStrings { refused, accepted };

// `value` as a double: a JSON number, or (NumberStrings::accepted) a string that is one number
// from its first character to its last, as strtod reads it. nullopt for anything else.
std::optional<double> number_in(const nlohmann::json& value, NumberStrings strings);

// `value` as a whole number: a JSON integer within int64, or a number as number_in reads it that
// is finite, has no fractional part and lies within int64 (5e8, 1000.0; pydantic accepts those
// for an int field). nullopt for anything else (2.5, 1e19, "big").
std::optional<int64_t> whole_number_in(const nlohmann::json& value, NumberStrings strings);

}  // namespace strata::common::config
