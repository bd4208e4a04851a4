#include "reference.hpp"

#include "f16_reference.hpp"

#include <strata/plugin.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

namespace strata::test::comm {

int64_t input_value(int32_t dtype, int rank, uint64_t index) {
  const int64_t v = static_cast<int64_t>((static_cast<uint64_t>(rank) * 7 + index * 3) % 11);
  return dtype == STRATA_U8 ? v : v - 5;
}

uint16_t reference_f16(float value) { return f16_nearest(value); }

// bf16 `bits` as a double; the pattern after the largest finite magnitude counts as 2^128, so
// that values past the last midpoint round to infinity as IEEE requires.
static double bf16_value(uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  if ((bits & 0x7fff) == 0x7f80) return sign * std::ldexp(1.0, 128);
  return double(std::bit_cast<float>(uint32_t{bits} << 16));
}

uint16_t reference_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if (std::isnan(value)) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint16_t down = static_cast<uint16_t>(bits >> 16);  // truncation: towards zero
  if ((bits & 0xffff) == 0) return down;
  const uint16_t up = static_cast<uint16_t>(down + 1);  // next magnitude away from zero
  const double below = std::fabs(double(value) - bf16_value(down));
  const double above = std::fabs(bf16_value(up) - double(value));
  if (below != above) return below < above ? down : up;
  return (down & 1) ? up : down;
}

void put_float(int32_t dtype, Bytes& bytes, uint64_t index, float value) {
  const size_t size = sdk::dtype_size(dtype);
  unsigned char* at = bytes.data() + index * size;
  uint16_t half = 0;
  switch (dtype) {
    case STRATA_F32: std::memcpy(at, &value, 4); return;
    case STRATA_F64: {
      const double d = value;
      std::memcpy(at, &d, 8);
      return;
    }
    case STRATA_F16: half = reference_f16(value); break;
    case STRATA_BF16: half = reference_bf16(value); break;
    default: put_integer(dtype, bytes, index, static_cast<int64_t>(value)); return;
  }
  std::memcpy(at, &half, 2);
}

void put_integer(int32_t dtype, Bytes& bytes, uint64_t index, int64_t value) {
  unsigned char* at = bytes.data() + index * sdk::dtype_size(dtype);
  switch (dtype) {
    case STRATA_I32: {
      const auto v = static_cast<int32_t>(value);
      std::memcpy(at, &v, 4);
      return;
    }
    case STRATA_I64: std::memcpy(at, &value, 8); return;
    case STRATA_U8: *at = static_cast<unsigned char>(value); return;
    case STRATA_F64: {
      const auto d = static_cast<double>(value);
      std::memcpy(at, &d, 8);
      return;
    }
    default: put_float(dtype, bytes, index, static_cast<float>(value)); return;
  }
}

Bytes rank_input(int32_t dtype, int rank, uint64_t count, uint64_t first) {
  Bytes bytes(count * sdk::dtype_size(dtype));
  for (uint64_t i = 0; i < count; ++i)
    put_integer(dtype, bytes, i, input_value(dtype, rank, first + i));
  return bytes;
}

Bytes expected_reduction(int32_t dtype, int32_t op, int world, uint64_t count, uint64_t first) {
  Bytes bytes(count * sdk::dtype_size(dtype));
  for (uint64_t i = 0; i < count; ++i) {
    int64_t sum = 0, low = INT64_MAX, high = INT64_MIN;
    for (int r = 0; r < world; ++r) {
      const int64_t v = input_value(dtype, r, first + i);
      sum += v;
      low = std::min(low, v);
      high = std::max(high, v);
    }
    switch (op) {
      case STRATA_SUM: put_integer(dtype, bytes, i, sum); break;
      case STRATA_MIN: put_integer(dtype, bytes, i, low); break;
      case STRATA_MAX: put_integer(dtype, bytes, i, high); break;
      case STRATA_AVG:
        if (dtype == STRATA_F64) {
          const double d = static_cast<double>(sum) / world;
          std::memcpy(bytes.data() + i * 8, &d, 8);
        } else if (dtype == STRATA_F32 || dtype == STRATA_F16 || dtype == STRATA_BF16) {
          put_float(dtype, bytes, i, static_cast<float>(sum) / static_cast<float>(world));
        } else {
          put_integer(dtype, bytes, i, sum / world);
        }
        break;
    }
  }
  return bytes;
}

std::string first_difference(const Bytes& actual, const Bytes& expected, int32_t dtype) {
  if (actual.size() != expected.size()) {
    return "size " + std::to_string(actual.size()) + " bytes, expected " +
           std::to_string(expected.size());
  }
  const size_t size = sdk::dtype_size(dtype);
  for (size_t i = 0; i < actual.size(); ++i) {
    if (actual[i] != expected[i]) {
      return "element " + std::to_string(i / size) + " differs (byte " + std::to_string(i) + ": " +
             std::to_string(actual[i]) + " vs expected " + std::to_string(expected[i]) + ")";
    }
  }
  return {};
}

}  // namespace strata::test::comm
