#include "comm_reference.hpp"

#include <strata/half.hpp>
#include <strata/plugin.hpp>

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace strata::plugin_check::comm {
namespace {

// bf16 is the upper half of an f32: round the lower half away to nearest, ties to even.
// (Finite values only: the references hold nothing else.)
uint16_t round_to_bf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  auto upper = static_cast<uint16_t>(bits >> 16);
  const uint32_t lower = bits & 0xffffu;
  if (lower > 0x8000u || (lower == 0x8000u && (upper & 1u) != 0)) ++upper;
  return upper;
}

template <class T>
void store(Bytes& bytes, uint64_t index, T value) {
  std::memcpy(bytes.data() + index * sizeof(T), &value, sizeof(T));
}

template <class T>
T load(const Bytes& bytes, uint64_t index) {
  T value;
  std::memcpy(&value, bytes.data() + index * sizeof(T), sizeof(T));
  return value;
}

double get_double(int32_t dtype, const Bytes& bytes, uint64_t index) {
  switch (dtype) {
    case STRATA_F32: return load<float>(bytes, index);
    case STRATA_F64: return load<double>(bytes, index);
    case STRATA_F16:
      return f16_to_float(load<uint16_t>(bytes, index));
    case STRATA_BF16: return std::bit_cast<float>(uint32_t{load<uint16_t>(bytes, index)} << 16);
    default: return static_cast<double>(get_integer(dtype, bytes, index));
  }
}

}  // namespace

int64_t input_value(int32_t dtype, int rank, uint64_t index) {
  // splitmix64 of (rank, index): irregular, and the same on every rank.
  uint64_t h = (static_cast<uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ull ^ (index + 1);
  h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
  h ^= h >> 31;
  return dtype == STRATA_U8 ? static_cast<int64_t>(h % 11) : static_cast<int64_t>(h % 21) - 10;
}

Bytes rank_input(int32_t dtype, int rank, uint64_t count, uint64_t first) {
  Bytes bytes(count * sdk::dtype_size(dtype));
  for (uint64_t i = 0; i < count; ++i)
    put_value(dtype, bytes, i, static_cast<double>(input_value(dtype, rank, first + i)));
  return bytes;
}

Bytes expected_reduction(int32_t dtype, int32_t op, int world, uint64_t count, uint64_t first) {
  Bytes bytes(count * sdk::dtype_size(dtype));
  const bool float_average = dtype == STRATA_F32 || dtype == STRATA_F16 || dtype == STRATA_BF16;
  for (uint64_t i = 0; i < count; ++i) {
    int64_t sum = 0, low = INT64_MAX, high = INT64_MIN;
    for (int r = 0; r < world; ++r) {
      const int64_t v = input_value(dtype, r, first + i);
      sum += v;
      low = std::min(low, v);
      high = std::max(high, v);
    }
    double result = 0;
    switch (op) {
      case STRATA_SUM: result = static_cast<double>(sum); break;
      case STRATA_MIN: result = static_cast<double>(low); break;
      case STRATA_MAX: result = static_cast<double>(high); break;
      case STRATA_AVG:
        if (float_average) {
          result = static_cast<float>(sum) / static_cast<float>(world);
        } else if (dtype == STRATA_F64) {
          result = static_cast<double>(sum) / world;
        } else {
          result = static_cast<double>(sum / world);  // C++ truncates, as the header asks
        }
        break;
    }
    put_value(dtype, bytes, i, result);
  }
  return bytes;
}

void put_value(int32_t dtype, Bytes& bytes, uint64_t index, double value) {
  switch (dtype) {
    case STRATA_F32: store(bytes, index, static_cast<float>(value)); return;
    case STRATA_F64: store(bytes, index, value); return;
    case STRATA_F16:
      store(bytes, index, float_to_f16(static_cast<float>(value)));
      return;
    case STRATA_BF16: store(bytes, index, round_to_bf16(static_cast<float>(value))); return;
    case STRATA_I32: store(bytes, index, static_cast<int32_t>(value)); return;
    case STRATA_I64: store(bytes, index, static_cast<int64_t>(value)); return;
    case STRATA_U8: store(bytes, index, static_cast<uint8_t>(value)); return;
  }
}

int64_t get_integer(int32_t dtype, const Bytes& bytes, uint64_t index) {
  switch (dtype) {
    case STRATA_I32: return load<int32_t>(bytes, index);
    case STRATA_I64: return load<int64_t>(bytes, index);
    case STRATA_U8: return load<uint8_t>(bytes, index);
    default: return static_cast<int64_t>(get_double(dtype, bytes, index));
  }
}

std::string value_text(int32_t dtype, const Bytes& bytes, uint64_t index) {
  char text[64];
  if (dtype == STRATA_I32 || dtype == STRATA_I64 || dtype == STRATA_U8) {
    std::snprintf(text, sizeof(text), "%" PRId64, get_integer(dtype, bytes, index));
  } else {
    // Enough digits to tell any two values of the dtype apart.
    std::snprintf(text, sizeof(text), dtype == STRATA_F64 ? "%.17g" : "%.9g",
                  get_double(dtype, bytes, index));
  }
  return text;
}

int64_t first_mismatch(const Bytes& got, const Bytes& expected, int32_t dtype) {
  const size_t size = sdk::dtype_size(dtype);
  const size_t bytes = std::min(got.size(), expected.size());
  if (bytes == 0) return -1;  // (memcmp must not see the NULL data() of an empty vector)
  if (std::memcmp(got.data(), expected.data(), bytes) == 0) return -1;
  for (size_t i = 0; i < bytes; ++i) {
    if (got[i] != expected[i]) return static_cast<int64_t>(i / size);
  }
  return -1;
}

std::string dtype_label(int32_t dtype) { return sdk::dtype_name(dtype); }

std::string op_label(int32_t op) {
  switch (op) {
    case STRATA_SUM: return "sum";
    case STRATA_AVG: return "avg";
    case STRATA_MIN: return "min";
    case STRATA_MAX: return "max";
    default: return "op" + std::to_string(op);
  }
}

}  // namespace strata::plugin_check::comm
