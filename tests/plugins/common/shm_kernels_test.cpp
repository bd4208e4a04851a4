// strata_common_shm (plugins/common/shm): the shared-memory reduction kernels. Every instruction
// set this CPU runs gives the scalar reference's bits for every dtype and op (random data with NaNs, infinities, signed zeros and
// subnormals; 1 to 5 and 64 sources; lengths around the vector widths; aliasing; a second
// destination), and the reference itself matches hand-worked values and the MPI path's arithmetic
// (widen, f32 fold, divide as the SDK's divide_in_place does, narrow once).
#include <strata_common/shm_isa.hpp>
#include <strata_common/shm_kernels.hpp>

#include <gtest/gtest.h>
#include <strata/comm/half_arrays.hpp>
#include <strata/plugin.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace strata::common::shm {
namespace {

using sdk::comm::f32_to_half;
using sdk::comm::half_to_f32;

constexpr int32_t kDtypes[] = {STRATA_F32,  STRATA_F16, STRATA_BF16, STRATA_F64,
                               STRATA_I32, STRATA_I64, STRATA_U8};
constexpr int32_t kOps[] = {STRATA_SUM, STRATA_AVG, STRATA_MIN, STRATA_MAX};
constexpr int kSourceCounts[] = {1, 2, 3, 4, 5, 64};
constexpr size_t kCounts[] = {0, 1, 7, 15, 16, 17, 1000, 4099};
constexpr int kDivisors[] = {2, 3, 4};

size_t element_size(int32_t dtype) {
  switch (dtype) {
    case STRATA_F16:
    case STRATA_BF16: return 2;
    case STRATA_F64:
    case STRATA_I64: return 8;
    case STRATA_U8: return 1;
    default: return 4;
  }
}

const char* dtype_name(int32_t dtype) { return sdk::dtype_name(dtype); }
const char* op_name(int32_t op) {
  static const char* const names[] = {"SUM", "AVG", "MIN", "MAX"};
  return names[op];
}

// Floats of every kind: mostly finite values of mixed magnitudes (so sums cancel and round), and
// about one in eight special: quiet and signalling NaNs of either sign with payloads, infinities,
// signed zeros, subnormals, the largest finite value.
template <class F, class U>
F random_float(std::mt19937_64& rng) {
  constexpr int kMantissa = std::numeric_limits<F>::digits - 1;
  constexpr U kExp = static_cast<U>(~U{0} >> 1) & ~((U{1} << kMantissa) - 1);
  constexpr U kSign = static_cast<U>(U{1} << (sizeof(U) * 8 - 1));
  const U bits = static_cast<U>(rng());
  switch (rng() % 64) {
    case 0:  // quiet NaN with a payload
      return std::bit_cast<F>(
          static_cast<U>((bits & kSign) | kExp | (U{1} << (kMantissa - 1)) | (bits & 0xff)));
    case 1: return std::bit_cast<F>(static_cast<U>(kSign | kExp | 1u | (bits & 0xff0)));  // sNaN
    case 2: return std::numeric_limits<F>::infinity();
    case 3: return -std::numeric_limits<F>::infinity();
    case 4: return F(0);
    case 5: return -F(0);
    case 6:  // subnormal (or zero)
      return std::bit_cast<F>(static_cast<U>(bits & (kSign | ((U{1} << kMantissa) - 1))));
    case 7: return std::numeric_limits<F>::max();
    default: break;
  }
  std::uniform_real_distribution<F> mantissa(-2, 2);
  return std::ldexp(mantissa(rng), static_cast<int>(rng() % 40) - 20);
}

// 16-bit patterns: random bits (every kind, NaNs included) and small values whose sums round.
uint16_t random_half(std::mt19937_64& rng, int32_t dtype) {
  const auto bits = static_cast<uint16_t>(rng());
  if (rng() % 2 == 0) return bits;
  const float small = std::ldexp(static_cast<float>(static_cast<int>(rng() % 2001) - 1000), -8);
  return dtype == STRATA_F16 ? float_to_f16(small) : float_to_bf16(small);
}

std::vector<unsigned char> random_array(int32_t dtype, size_t count, std::mt19937_64& rng) {
  std::vector<unsigned char> bytes(count * element_size(dtype) + 8);  // +8: room for an offset
  auto put = [&](size_t i, auto value) {
    std::memcpy(&bytes[i * sizeof value], &value, sizeof value);
  };
  for (size_t i = 0; i < count + 8 / element_size(dtype); ++i) {
    switch (dtype) {
      case STRATA_F32: put(i, random_float<float, uint32_t>(rng)); break;
      case STRATA_F64: put(i, random_float<double, uint64_t>(rng)); break;
      case STRATA_F16:
      case STRATA_BF16: put(i, random_half(rng, dtype)); break;
      case STRATA_I32: put(i, static_cast<uint32_t>(rng())); break;
      case STRATA_I64: put(i, static_cast<uint64_t>(rng())); break;
      default: put(i, static_cast<uint8_t>(rng())); break;
    }
  }
  return bytes;
}

// The first element where two arrays differ, with both values' bits, or "" when equal.
std::string first_difference(const void* got, const void* want, size_t count, int32_t dtype) {
  const size_t size = element_size(dtype);
  const auto* g = static_cast<const unsigned char*>(got);
  const auto* w = static_cast<const unsigned char*>(want);
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(g + i * size, w + i * size, size) == 0) continue;
    uint64_t gv = 0, wv = 0;
    std::memcpy(&gv, g + i * size, size);
    std::memcpy(&wv, w + i * size, size);
    std::ostringstream s;
    s << "element " << i << ": got 0x" << std::hex << gv << ", want 0x" << wv;
    return s.str();
  }
  return "";
}

struct Case {
  int32_t dtype;
  int32_t op;
  int divisor;
  int n_sources;
  size_t count;
};

std::string describe(const Case& c) {
  return std::string(dtype_name(c.dtype)) + " " + op_name(c.op) + " divisor " +
         std::to_string(c.divisor) + ", " + std::to_string(c.n_sources) + " sources of " +
         std::to_string(c.count);
}

// Random sources (offset by one element when `offset`, so vector loads are unaligned); runs the
// reference and `kernels` and checks they agree on out and (when used) out2, and that the
// sources are unchanged.
void check_case(const Kernels& kernels, const Case& c, std::mt19937_64& rng, bool offset,
                bool use_out2) {
  const size_t size = element_size(c.dtype);
  const size_t skip = offset ? size : 0;
  std::vector<std::vector<unsigned char>> arrays;
  std::vector<const void*> sources;
  for (int k = 0; k < c.n_sources; ++k) arrays.push_back(random_array(c.dtype, c.count, rng));
  for (auto& a : arrays) sources.push_back(a.data() + skip);
  const auto originals = arrays;
  std::vector<unsigned char> want(c.count * size + 1), got(c.count * size + 1, 0xa5),
      got2(c.count * size + 1, 0x5a);
  ReduceArgs args{sources.data(), c.n_sources, want.data(), nullptr, c.count, c.dtype, c.op,
                  c.divisor};
  scalar_reference().reduce(args);
  args.out = got.data();
  args.out2 = use_out2 ? got2.data() : nullptr;
  kernels.reduce(args);
  EXPECT_EQ(first_difference(got.data(), want.data(), c.count, c.dtype), "") << describe(c);
  if (use_out2) {
    EXPECT_EQ(first_difference(got2.data(), want.data(), c.count, c.dtype), "")
        << describe(c) << " (out2)";
  }
  EXPECT_EQ(got[c.count * size], 0xa5) << describe(c) << ": wrote past the end";
  EXPECT_TRUE(arrays == originals) << describe(c) << ": a source changed";
}

class EveryIsa : public testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!isa_available(GetParam())) {
      GTEST_SKIP() << isa_name(GetParam()) << " kernels not tested: this CPU lacks "
                   << missing_features(GetParam());
    }
  }
  const Kernels& kernels() const { return kernels_for(GetParam()); }
};

TEST_P(EveryIsa, MatchesTheReferenceBitForBit) {
  std::mt19937_64 rng(1234 + static_cast<int>(GetParam()));
  int cases = 0;
  for (int32_t dtype : kDtypes) {
    for (int32_t op : kOps) {
      for (int divisor : op == STRATA_AVG ? std::vector<int>{1, 2, 3, 4} : std::vector<int>{0}) {
        for (int n : kSourceCounts) {
          for (size_t count : kCounts) {
            check_case(kernels(), {dtype, op, divisor, n, count}, rng, cases % 3 == 1,
                       cases % 2 == 0);
            ++cases;
            if (HasFailure()) return;  // one report, not thousands
          }
        }
      }
    }
  }
}

// out is the same pointer as sources[1] (or sources[0]): the result is still the reference's.
TEST_P(EveryIsa, OutMayAliasASource) {
  std::mt19937_64 rng(99);
  for (int32_t dtype : kDtypes) {
    for (int32_t op : kOps) {
      for (int alias : {0, 1}) {
        const size_t count = 4099;
        const size_t size = element_size(dtype);
        std::vector<std::vector<unsigned char>> arrays;
        for (int k = 0; k < 3; ++k) arrays.push_back(random_array(dtype, count, rng));
        std::vector<const void*> sources{arrays[0].data(), arrays[1].data(), arrays[2].data()};
        std::vector<unsigned char> want(count * size), want2(count * size);
        scalar_reference().reduce({sources.data(), 3, want.data(), nullptr, count, dtype, op, 3});
        std::vector<unsigned char> second(count * size);
        kernels().reduce({sources.data(), 3, arrays[alias].data(), second.data(), count, dtype,
                          op, 3});
        const Case c{dtype, op, 3, 3, count};
        EXPECT_EQ(first_difference(arrays[alias].data(), want.data(), count, dtype), "")
            << describe(c) << ", out == sources[" << alias << "]";
        EXPECT_EQ(first_difference(second.data(), want.data(), count, dtype), "")
            << describe(c) << ", out2 with out == sources[" << alias << "]";
      }
    }
  }
}

TEST_P(EveryIsa, RejectsBadArguments) {
  const float a[1] = {1};
  const void* sources[] = {a};
  float out[1];
  EXPECT_THROW(kernels().reduce({sources, 1, out, nullptr, 1, 99, STRATA_SUM, 0}), sdk::Error);
  EXPECT_THROW(kernels().reduce({sources, 1, out, nullptr, 1, STRATA_F32, 99, 0}), sdk::Error);
  EXPECT_THROW(kernels().reduce({sources, 0, out, nullptr, 1, STRATA_F32, STRATA_SUM, 0}),
               sdk::Error);
}

INSTANTIATE_TEST_SUITE_P(Shm, EveryIsa, testing::Values(Isa::scalar, Isa::avx2, Isa::avx512),
                         [](const testing::TestParamInfo<Isa>& info) {
                           return std::string(isa_name(info.param));
                         });

// --- The reference against values worked out by hand. ---

template <class T>
std::vector<T> reduce(const std::vector<std::vector<T>>& inputs, int32_t dtype, int32_t op,
                      int divisor = 0) {
  std::vector<const void*> sources;
  for (const auto& v : inputs) sources.push_back(v.data());
  std::vector<T> out(inputs[0].size());
  scalar_reference().reduce({sources.data(), static_cast<int>(sources.size()), out.data(),
                             nullptr, out.size(), dtype, op, divisor});
  return out;
}

TEST(ShmReference, F16SumsFoldInF32AndRoundOnce) {
  const uint16_t one = 0x3c00, half_ulp = 0x1000;  // 1.0 and 2^-11 (half of 1.0's ulp)
  // 1 + 2^-11 is a tie: to even, 1.0. Twice 2^-11 reaches 1 + 2^-10 only because the sum is
  // kept in f32 (rounding after each step would stay at 1.0).
  EXPECT_EQ(reduce<uint16_t>({{one}, {half_ulp}}, STRATA_F16, STRATA_SUM)[0], 0x3c00);
  EXPECT_EQ(reduce<uint16_t>({{one}, {half_ulp}, {half_ulp}}, STRATA_F16, STRATA_SUM)[0], 0x3c01);
  // (1 + 2^-10) + 2^-11 is a tie between 0x3c01 and 0x3c02: to even.
  EXPECT_EQ(reduce<uint16_t>({{0x3c01}, {half_ulp}}, STRATA_F16, STRATA_SUM)[0], 0x3c02);
  // 65504 + 16 = 65520 rounds to inf; AVG by 2 halves it in f32 first: 32760 -> 32768.
  EXPECT_EQ(reduce<uint16_t>({{0x7bff}, {0x4c00}}, STRATA_F16, STRATA_SUM)[0], 0x7c00);
  EXPECT_EQ(reduce<uint16_t>({{0x7bff}, {0x4c00}}, STRATA_F16, STRATA_AVG, 2)[0], 0x7800);
}

TEST(ShmReference, Bf16TiesRoundToEven) {
  const uint16_t one = 0x3f80, half_ulp = 0x3b80;  // 1.0 and 2^-8
  EXPECT_EQ(reduce<uint16_t>({{one}, {half_ulp}}, STRATA_BF16, STRATA_SUM)[0], 0x3f80);
  EXPECT_EQ(reduce<uint16_t>({{0x3f81}, {half_ulp}}, STRATA_BF16, STRATA_SUM)[0], 0x3f82);
  EXPECT_EQ(reduce<uint16_t>({{one}, {half_ulp}, {half_ulp}}, STRATA_BF16, STRATA_SUM)[0], 0x3f81);
  // 3.0 / 3 = 1 exactly in f32.
  EXPECT_EQ(reduce<uint16_t>({{one}, {one}, {one}}, STRATA_BF16, STRATA_AVG, 3)[0], 0x3f80);
}

TEST(ShmReference, IntegersWrapAndAvgTruncates) {
  EXPECT_EQ(reduce<uint8_t>({{200}, {100}}, STRATA_U8, STRATA_SUM)[0], 44);
  EXPECT_EQ(reduce<uint8_t>({{255}, {255}}, STRATA_U8, STRATA_AVG, 2)[0], 127);  // 254 / 2
  const int32_t i32_max = std::numeric_limits<int32_t>::max();
  EXPECT_EQ(reduce<int32_t>({{i32_max}, {1}}, STRATA_I32, STRATA_SUM)[0],
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(reduce<int32_t>({{-7}, {0}}, STRATA_I32, STRATA_AVG, 2)[0], -3);
  EXPECT_EQ(reduce<int64_t>({{std::numeric_limits<int64_t>::min()}, {-1}}, STRATA_I64,
                            STRATA_SUM)[0],
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(reduce<int64_t>({{5}, {-9}, {2}}, STRATA_I64, STRATA_MIN)[0], -9);
  EXPECT_EQ(reduce<uint8_t>({{5}, {250}, {2}}, STRATA_U8, STRATA_MAX)[0], 250);
}

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

TEST(ShmReference, FirstNanInSourceOrderWins) {
  const float nan_a = std::bit_cast<float>(0x7fc00001u), nan_b = std::bit_cast<float>(0xffc00002u);
  const float snan = std::bit_cast<float>(0x7f800003u);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bits(reduce<float>({{1}, {nan_a}, {nan_b}}, STRATA_F32, STRATA_MAX)[0]), 0x7fc00001u);
  EXPECT_EQ(bits(reduce<float>({{nan_b}, {-inf}, {nan_a}}, STRATA_F32, STRATA_MIN)[0]),
            0xffc00002u);
  EXPECT_EQ(bits(reduce<float>({{2}, {nan_b}, {nan_a}}, STRATA_F32, STRATA_SUM)[0]), 0xffc00002u);
  // A signalling NaN keeps its bits through MIN/MAX (no arithmetic) and is made quiet by SUM.
  EXPECT_EQ(bits(reduce<float>({{snan}, {nan_a}}, STRATA_F32, STRATA_MAX)[0]), 0x7f800003u);
  EXPECT_EQ(bits(reduce<float>({{snan}, {nan_a}}, STRATA_F32, STRATA_SUM)[0]), 0x7fc00003u);
  // inf - inf: the default NaN.
  EXPECT_TRUE(std::isnan(reduce<float>({{inf}, {-inf}}, STRATA_F32, STRATA_SUM)[0]));
  // Ties keep the earlier source.
  EXPECT_EQ(bits(reduce<float>({{0.0f}, {-0.0f}}, STRATA_F32, STRATA_MAX)[0]), 0u);
  EXPECT_EQ(bits(reduce<float>({{-0.0f}, {0.0f}}, STRATA_F32, STRATA_MAX)[0]), 0x80000000u);
  EXPECT_EQ(bits(reduce<float>({{-0.0f}, {0.0f}}, STRATA_F32, STRATA_MIN)[0]), 0x80000000u);
  // f16: a signalling NaN is widened quiet (F16C) and narrowed with its top payload bits.
  EXPECT_EQ(reduce<uint16_t>({{0x3c00}, {0x7c01}, {0xfe00}}, STRATA_F16, STRATA_MAX)[0], 0x7e01);
}

// --- The reference against the MPI path's arithmetic: half_to_f32 on every source, an f32 (or
// the dtype's own) fold, the SDK's divide_in_place (strata/comm/reduce_ops.hpp; reimplemented
// element by element as an independent check), f32_to_half. NaN + NaN is compared as "a NaN"
// only: which operand's NaN plain `acc + s` returns is the compiler's choice, which the kernels'
// rule fixes. ---

template <class T>
T mpi_divide(T v, int divisor) {  // sdk::comm::divide_in_place
  const T d = static_cast<T>(divisor);
  if constexpr (std::is_floating_point_v<T>) {
    if ((divisor & (divisor - 1)) == 0) return v * (T(1) / d);
  }
  return static_cast<T>(v / d);
}

float mpi_step(int32_t op, float acc, float s) {
  if (op == STRATA_MIN) return std::isnan(acc) ? acc : std::isnan(s) ? s : s < acc ? s : acc;
  if (op == STRATA_MAX) return std::isnan(acc) ? acc : std::isnan(s) ? s : s > acc ? s : acc;
  return acc + s;
}

TEST(ShmReference, HalvesMatchTheMpiPath) {
  std::mt19937_64 rng(7);
  const size_t count = 4099;
  for (int32_t dtype : {STRATA_F16, STRATA_BF16}) {
    for (int32_t op : kOps) {
      for (int divisor : {2, 3, 4}) {
        for (int n : {1, 2, 5}) {
          std::vector<std::vector<uint16_t>> inputs(n, std::vector<uint16_t>(count));
          for (auto& v : inputs) {
            for (auto& h : v) h = random_half(rng, dtype);
          }
          const auto got = reduce<uint16_t>(inputs, dtype, op, divisor);
          std::vector<float> acc(count), wide(count);
          half_to_f32(dtype, inputs[0].data(), acc.data(), count);
          for (int k = 1; k < n; ++k) {
            half_to_f32(dtype, inputs[k].data(), wide.data(), count);
            for (size_t i = 0; i < count; ++i) acc[i] = mpi_step(op, acc[i], wide[i]);
          }
          if (op == STRATA_AVG) {
            for (auto& v : acc) v = mpi_divide(v, divisor);
          }
          std::vector<uint16_t> want(count);
          f32_to_half(dtype, acc.data(), want.data(), count);
          const uint16_t exp = dtype == STRATA_F16 ? 0x7c00 : 0x7f80;
          auto is_nan = [&](uint16_t h) { return (h & exp) == exp && (h & ~(exp | 0x8000)) != 0; };
          for (size_t i = 0; i < count; ++i) {
            const bool both_nan = is_nan(got[i]) && is_nan(want[i]);
            if (got[i] == want[i] || (both_nan && op != STRATA_MIN && op != STRATA_MAX)) continue;
            ADD_FAILURE() << dtype_name(dtype) << " " << op_name(op) << " divisor " << divisor
                          << ", " << n << " sources, element " << i << ": got 0x" << std::hex
                          << got[i] << ", MPI path 0x" << want[i];
            return;
          }
        }
      }
    }
  }
}

TEST(ShmReference, DivisionMatchesTheMpiPath) {
  std::mt19937_64 rng(8);
  for (int divisor : {2, 3, 4, 5, 8, 7}) {
    for (int i = 0; i < 2000; ++i) {
      const float f = random_float<float, uint32_t>(rng);
      const double d = random_float<double, uint64_t>(rng);
      const auto i32 = static_cast<int32_t>(rng());
      const auto i64 = static_cast<int64_t>(rng());
      const auto u8 = static_cast<uint8_t>(rng());
      const float got_f = reduce<float>({{f}}, STRATA_F32, STRATA_AVG, divisor)[0];
      const double got_d = reduce<double>({{d}}, STRATA_F64, STRATA_AVG, divisor)[0];
      const float want_f = mpi_divide(f, divisor);
      const double want_d = mpi_divide(d, divisor);
      // A NaN input keeps its payload (made quiet) through either division.
      EXPECT_EQ(bits(got_f), bits(want_f)) << f << " / " << divisor;
      EXPECT_EQ(std::bit_cast<uint64_t>(got_d), std::bit_cast<uint64_t>(want_d)) << d;
      EXPECT_EQ(reduce<int32_t>({{i32}}, STRATA_I32, STRATA_AVG, divisor)[0],
                mpi_divide(i32, divisor));
      EXPECT_EQ(reduce<int64_t>({{i64}}, STRATA_I64, STRATA_AVG, divisor)[0],
                mpi_divide(i64, divisor));
      EXPECT_EQ(reduce<uint8_t>({{u8}}, STRATA_U8, STRATA_AVG, divisor)[0],
                mpi_divide(u8, divisor));
      if (HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace strata::common::shm
