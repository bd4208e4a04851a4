// Deterministic per-rank inputs and exact expected results for the comm plugin tests.
//
// Rank r's element i is a small integer (|v| <= 10, u8 in [0, 10]), so every rank can compute the
// reduction of all ranks' inputs locally and exactly; sums up to 4 ranks are exact in every dtype,
// f16 and bf16 included. AVG follows the plugin contract: the f32 (f64 for f64) division of the
// exact sum, rounded once to the dtype; integers divide truncating.
#pragma once

#include <strata/plugin_api.h>

#include <cstdint>
#include <string>
#include <vector>

namespace strata::test::comm {

using Bytes = std::vector<unsigned char>;

int64_t input_value(int32_t dtype, int rank, uint64_t index);

// `count` elements of `rank`'s input, starting at element `first`.
Bytes rank_input(int32_t dtype, int rank, uint64_t count, uint64_t first = 0);
// The reduction over ranks 0..world-1 of elements [first, first + count).
Bytes expected_reduction(int32_t dtype, int32_t op, int world, uint64_t count, uint64_t first = 0);

// Writes `value` (exactly representable, or rounded to nearest even) as element `index`.
void put_integer(int32_t dtype, Bytes& bytes, uint64_t index, int64_t value);
void put_float(int32_t dtype, Bytes& bytes, uint64_t index, float value);

// Reference conversions written independently of the plugin's (f16 by tests/support's
// f16_reference.hpp, bf16 by picking the nearer neighbour in double precision).
uint16_t reference_f16(float value);
uint16_t reference_bf16(float value);

// Empty when equal; otherwise a sentence naming the first differing element.
std::string first_difference(const Bytes& actual, const Bytes& expected, int32_t dtype);

}  // namespace strata::test::comm
