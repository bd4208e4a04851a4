// Deterministic per-rank inputs and exact expected results for the comm checks, computed locally:
// every rank can generate every rank's input from (rank, index), so a reference needs no
// communication.
//
// Inputs are small integers (|v| <= 10; u8 in [0, 10]) from a hash of (rank, index), so blocks of
// different ranks and positions differ irregularly (a block landing in the wrong place shows) and
// every reduction over up to 25 ranks is exact in every dtype, f16 and bf16 included. Hence every
// comparison is bitwise (tolerance zero):
//  - SUM, MIN, MAX: exact integers, representable in every dtype.
//  - AVG: the exact sum divided by the world size once, as the header defines it: f64 in f64;
//    f32, f16 and bf16 in f32 (halves accumulate in f32), then rounded once to nearest even.
//    Integers divide truncating. A correctly rounded division of an exact sum has one answer;
//    for f16/bf16, rounding the f32 quotient and rounding the exact quotient agree for every
//    sum these inputs give at every world size up to 25 (checked exhaustively), so a plugin that
//    divides in f64 passes too.
#pragma once

#include <strata/plugin_api.h>

#include <cstdint>
#include <string>
#include <vector>

namespace strata::plugin_check::comm {

using Bytes = std::vector<unsigned char>;

// The byte every receive buffer is filled with before a collective: whatever the collective must
// not write (allgatherv's gaps) still holds it afterwards.
inline constexpr unsigned char kUntouched = 0xAB;

int64_t input_value(int32_t dtype, int rank, uint64_t index);

// `count` elements of `rank`'s input, starting at element `first`.
Bytes rank_input(int32_t dtype, int rank, uint64_t count, uint64_t first = 0);

// The reduction by `op` over ranks 0..world-1 of elements [first, first + count).
Bytes expected_reduction(int32_t dtype, int32_t op, int world, uint64_t count, uint64_t first = 0);

// Writes `value` as element `index` of `bytes` in `dtype`: integers exactly, floating-point
// values rounded to nearest even (f16 by the SDK's scalar conversion, strata/half.hpp, which
// tests/plugins/allreduce/half_test.cpp checks bit for bit against an independent reference; bf16
// by its own rounding, independent of the SDK's and the plugins' conversions).
void put_value(int32_t dtype, Bytes& bytes, uint64_t index, double value);

// Element `index` of `bytes` as an integer (truncating), e.g. a rank id that travelled as `dtype`.
int64_t get_integer(int32_t dtype, const Bytes& bytes, uint64_t index);

// Element `index` of `bytes` as text: "3", "-2.5", "nan".
std::string value_text(int32_t dtype, const Bytes& bytes, uint64_t index);

// The index of the first element where `got` and `expected` differ bitwise (both hold the same
// number of elements), or -1 if none does.
int64_t first_mismatch(const Bytes& got, const Bytes& expected, int32_t dtype);

// "f32", "sum", ... for check names (lower case).
std::string dtype_label(int32_t dtype);
std::string op_label(int32_t op);

}  // namespace strata::plugin_check::comm
