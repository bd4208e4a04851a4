// strata_amp's instruction-set paths: every path this CPU has (and the forced scalar one) gives
// bit-identical casts and grad_stats, on one thread or several; STRATA_CPU_ISA (or the deprecated
// STRATA_AMP_ISA) forces a path and refuses one the CPU lacks.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "cpu_reading.hpp"
#include "optim_harness.hpp"
#include "scoped_env.hpp"

namespace strata::test {
namespace {

struct IsaPath {
  const char* name;
  bool available;
};

void PrintTo(const IsaPath& p, std::ostream* os) { *os << p.name; }

// The paths this CPU runs, by the tests' own reading (cpu_reading.hpp), not the plugin's.
std::vector<IsaPath> isa_paths() {
  return {{"scalar", true}, {"avx2", cpu_runs_avx2()}, {"avx512", cpu_runs_avx512()}};
}

// An instance created with `variable` (STRATA_CPU_ISA, or the deprecated STRATA_AMP_ISA with
// STRATA_CPU_ISA unset) set to `isa`; the environment is restored afterwards.
std::unique_ptr<Instance<strata_precision_ops>> make_amp(FakeHost& host, const char* isa,
                                                         unsigned threads,
                                                         const char* variable = "STRATA_CPU_ISA") {
  const ScopedEnv cpu("STRATA_CPU_ISA", nullptr);
  const ScopedEnv amp_isa("STRATA_AMP_ISA", nullptr);
  const ScopedEnv forced(variable, isa);
  return std::make_unique<Instance<strata_precision_ops>>(
      amp_ops(), host, R"({"threads": )" + std::to_string(threads) + "}");
}

template <class Dst, class Src>
std::vector<Dst> cast(const Instance<strata_precision_ops>& amp, const std::vector<Src>& src,
                      int32_t from, int32_t to) {
  std::vector<Dst> out(src.size());
  const strata_buffer s = sdk::host_buffer(const_cast<Src*>(src.data()), src.size(), from);
  const strata_buffer d = sdk::host_buffer(out.data(), out.size(), to);
  strata_error err = sdk::make_error();
  EXPECT_EQ(amp.ops().cast(amp.self(), &s, &d, &err), STRATA_OK) << err.message;
  return out;
}

// Every 16-bit pattern, then ~3 M fp32 values (above the threaded size, with an odd tail): random
// bit patterns (nans, infs and subnormals included) and values near each format's rounding ties.
struct Inputs {
  std::vector<uint16_t> halves;
  std::vector<float> floats;
  Inputs() : halves(65536) {
    for (uint32_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i);
    std::mt19937 rng(4);
    std::uniform_int_distribution<uint32_t> any;
    floats.resize((size_t{3} << 20) + 13);
    for (size_t i = 0; i < floats.size(); ++i) {
      uint32_t b = any(rng);
      if (i % 3 == 1) b &= ~0x1fffu;                        // short mantissas: ties
      if (i % 5 == 2) b = (b & 0x8fffffffu) | 0x30000000u;  // f16's subnormal and normal range
      floats[i] = std::bit_cast<float>(b);
    }
  }
};

const Inputs& inputs() {
  static const Inputs in;
  return in;
}

size_t first_difference(const void* a, const void* b, size_t elements, size_t size) {
  const auto* x = static_cast<const unsigned char*>(a);
  const auto* y = static_cast<const unsigned char*>(b);
  for (size_t i = 0; i < elements; ++i) {
    if (std::memcmp(x + i * size, y + i * size, size) != 0) return i;
  }
  return elements;
}

// For skip messages: the features the paths need that this CPU lacks.
std::string missing_features() {
  std::string out;
  const auto note = [&out](bool has, const char* name) {
    if (!has) out += std::string(out.empty() ? "" : " ") + name;
  };
  note(__builtin_cpu_supports("avx2"), "avx2");
  note(cpu_has_f16c(), "f16c");
  note(__builtin_cpu_supports("fma"), "fma");
  note(__builtin_cpu_supports("bmi"), "bmi");
  note(__builtin_cpu_supports("bmi2"), "bmi2");
  note(__builtin_cpu_supports("avx512f"), "avx512f");
  note(__builtin_cpu_supports("avx512vl"), "avx512vl");
  note(__builtin_cpu_supports("avx512dq"), "avx512dq");
  note(__builtin_cpu_supports("avx512bw"), "avx512bw");
  return out;
}

class AmpIsa : public ::testing::TestWithParam<IsaPath> {
 protected:
  void SetUp() override {
    if (!GetParam().available) {
      GTEST_SKIP() << GetParam().name << " not on this CPU (it lacks: " << missing_features()
                   << "); the path is compared with scalar only where the CPU runs it";
    }
    reference_ = make_amp(host_, "scalar", 1);
    ASSERT_EQ(reference_->status(), STRATA_OK) << reference_->message();
  }
  FakeHost host_;
  std::unique_ptr<Instance<strata_precision_ops>> reference_;
};

TEST_P(AmpIsa, CastsAreBitIdenticalToScalarOnOneAndManyThreads) {
  const Inputs& in = inputs();
  for (unsigned threads : {1u, 4u}) {
    const auto amp = make_amp(host_, GetParam().name, threads);
    ASSERT_EQ(amp->status(), STRATA_OK) << amp->message();
    for (int32_t dtype : {STRATA_F16, STRATA_BF16}) {
      const auto wide = cast<float>(*amp, in.halves, dtype, STRATA_F32);
      const auto wide_ref = cast<float>(*reference_, in.halves, dtype, STRATA_F32);
      size_t at = first_difference(wide.data(), wide_ref.data(), wide.size(), sizeof(float));
      EXPECT_EQ(at, wide.size()) << "widening " << sdk::dtype_name(dtype) << " pattern " << at
                                 << ", threads " << threads;

      const auto narrow = cast<uint16_t>(*amp, in.floats, STRATA_F32, dtype);
      const auto narrow_ref = cast<uint16_t>(*reference_, in.floats, STRATA_F32, dtype);
      at = first_difference(narrow.data(), narrow_ref.data(), narrow.size(), sizeof(uint16_t));
      EXPECT_EQ(at, narrow.size())
          << "narrowing to " << sdk::dtype_name(dtype) << std::hex << " input 0x"
          << (at < in.floats.size() ? std::bit_cast<uint32_t>(in.floats[at]) : 0u) << std::dec
          << ", threads " << threads;
    }
  }
}

TEST_P(AmpIsa, GradStatsAreBitIdenticalToScalarOnOneAndManyThreads) {
  // Finite values of very different magnitudes, so any change in summation order would show.
  std::vector<float> big(inputs().floats.size());
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::uniform_int_distribution<int> exponent(-40, 40);
  for (float& g : big) g = std::ldexp(mantissa(rng), exponent(rng));
  ShardSet shards({big.size(), 7, 33, 1});
  shards.grad(0) = big;
  for (size_t s = 1; s < shards.size(); ++s) {
    for (float& g : shards.grad(s)) g = mantissa(rng);
  }
  const auto stats = [&](const Instance<strata_precision_ops>& amp) {
    strata_grad_stats st{};
    st.struct_size = sizeof st;
    strata_error err = sdk::make_error();
    EXPECT_EQ(amp.ops().grad_stats(amp.self(), shards.data(), shards.size(), &st, &err), STRATA_OK)
        << err.message;
    return st;
  };
  const strata_grad_stats expected = stats(*reference_);
  EXPECT_EQ(expected.nonfinite, 0);
  for (unsigned threads : {1u, 2u, 4u}) {
    const auto amp = make_amp(host_, GetParam().name, threads);
    ASSERT_EQ(amp->status(), STRATA_OK) << amp->message();
    const strata_grad_stats got = stats(*amp);
    EXPECT_EQ(std::bit_cast<uint64_t>(got.sum_sq), std::bit_cast<uint64_t>(expected.sum_sq))
        << got.sum_sq << " vs " << expected.sum_sq << ", threads " << threads;
    EXPECT_EQ(got.nonfinite, 0);
  }
  // One nan deep inside the threaded part is still found.
  shards.grad(0)[big.size() - 100000] = std::nanf("");
  const auto amp = make_amp(host_, GetParam().name, 4);
  EXPECT_EQ(stats(*amp).nonfinite, 1);
}

// Sizes whose split over threads leaves remainders: every element must still be converted once.
TEST_P(AmpIsa, EveryElementIsConvertedWhateverTheSplit) {
  for (size_t n : {(size_t{1} << 21) + 3, (size_t{1} << 20) + 63, (size_t{3} << 20) + 13}) {
    std::vector<float> in(n);
    for (size_t i = 0; i < n; ++i) in[i] = 1.0f + static_cast<float>(i % 1021) / 1024.0f;
    const auto expected = cast<uint16_t>(*reference_, in, STRATA_F32, STRATA_F16);
    for (unsigned threads : {2u, 3u, 4u}) {
      const auto amp = make_amp(host_, GetParam().name, threads);
      ASSERT_EQ(amp->status(), STRATA_OK) << amp->message();
      std::vector<uint16_t> out(n, 0xdead);  // never a conversion of a value in [1, 2)
      const strata_buffer s = sdk::host_buffer(in.data(), n, STRATA_F32);
      const strata_buffer d = sdk::host_buffer(out.data(), n, STRATA_F16);
      strata_error err = sdk::make_error();
      ASSERT_EQ(amp->ops().cast(amp->self(), &s, &d, &err), STRATA_OK) << err.message;
      const size_t at = first_difference(out.data(), expected.data(), n, sizeof(uint16_t));
      EXPECT_EQ(at, n) << "n " << n << ", threads " << threads;
    }
  }
}

// Calls writing 16 MiB or more use streaming stores after a few unaligned head elements; the
// destinations start one element past an aligned address to exercise that head.
TEST_P(AmpIsa, LargeStreamingCallsGiveTheSameBits) {
  const auto amp = make_amp(host_, GetParam().name, 1);
  ASSERT_EQ(amp->status(), STRATA_OK) << amp->message();
  std::mt19937 rng(21);
  std::uniform_int_distribution<uint32_t> any;
  const size_t n = (size_t{8} << 20) + 5;
  std::vector<float> in(n);
  for (float& f : in) f = std::bit_cast<float>(any(rng));
  std::vector<uint16_t> halves(n);
  for (uint16_t& h : halves) h = static_cast<uint16_t>(any(rng));
  const auto run = [&](const Instance<strata_precision_ops>& a, const void* src, int32_t from,
                       int32_t to) {
    std::vector<unsigned char> out((n + 1) * sdk::dtype_size(to));
    const strata_buffer s = sdk::host_buffer(const_cast<void*>(src), n, from);
    const strata_buffer d = sdk::host_buffer(out.data() + sdk::dtype_size(to), n, to);
    strata_error err = sdk::make_error();
    EXPECT_EQ(a.ops().cast(a.self(), &s, &d, &err), STRATA_OK) << err.message;
    return out;
  };
  for (int32_t dtype : {STRATA_F16, STRATA_BF16}) {
    EXPECT_TRUE(run(*amp, in.data(), STRATA_F32, dtype) ==
                run(*reference_, in.data(), STRATA_F32, dtype))
        << "narrowing to " << sdk::dtype_name(dtype);
    EXPECT_TRUE(run(*amp, halves.data(), dtype, STRATA_F32) ==
                run(*reference_, halves.data(), dtype, STRATA_F32))
        << "widening " << sdk::dtype_name(dtype);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryPath, AmpIsa, ::testing::ValuesIn(isa_paths()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(AmpIsaChoice, UnavailableOrUnknownPathsAreRefused) {
  FakeHost host;
  // STRATA_CPU_ISA, and the deprecated STRATA_AMP_ISA (still read when STRATA_CPU_ISA is unset):
  // errors name the variable that was read.
  for (const char* variable : {"STRATA_CPU_ISA", "STRATA_AMP_ISA"}) {
    SCOPED_TRACE(variable);
    for (const IsaPath& path : isa_paths()) {
      const auto amp = make_amp(host, path.name, 0, variable);
      if (path.available) {
        EXPECT_EQ(amp->status(), STRATA_OK) << path.name << ": " << amp->message();
      } else {
        EXPECT_EQ(amp->status(), STRATA_ERR_UNSUPPORTED) << path.name;
        EXPECT_NE(amp->message().find(std::string(variable) + ": " + path.name +
                                      " requested but this CPU does not support it"),
                  std::string::npos)
            << amp->message();
      }
    }
    const auto bad = make_amp(host, "sse9", 0, variable);
    EXPECT_EQ(bad->status(), STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_NE(bad->message().find(std::string(variable) +
                                  ": expected scalar, avx2, avx512 or auto, got 'sse9'"),
              std::string::npos)
        << bad->message();
  }
}

}  // namespace
}  // namespace strata::test
