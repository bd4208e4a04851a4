// cast.<src>_to_<dst>: the plugin's cast against the SDK's scalar conversions (strata/half.hpp;
// for f64 the C++ conversions, which round to nearest even), bit for bit. Widening casts get every
// one of the 65536 16-bit patterns; narrowing casts get the special values, every value of the
// narrow type, every tie between two neighbours (and the floats either side of it), subnormals,
// the overflow edge, NaN payloads and a million pseudo-random bit patterns, in one buffer (so a
// plugin's threaded path for large buffers runs too).
//
// A NaN must give a NaN; its payload and sign are not compared (the ABI says "nan preserved", and
// a vector conversion may quieten a signalling NaN as the in-tree plugin does). Everything else is
// compared bit for bit.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <strata/half.hpp>
#include <string>
#include <vector>

#include "precision/precision_checks.hpp"

namespace strata::plugin_check {
namespace {

template <class T>
struct Bits;
template <>
struct Bits<uint16_t> {
  using type = uint16_t;
};
template <>
struct Bits<float> {
  using type = uint32_t;
};
template <>
struct Bits<double> {
  using type = uint64_t;
};

template <class T>
typename Bits<T>::type bits(T x) {
  typename Bits<T>::type u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}

// What the element is as a number, for the message.
double value_of(uint16_t h, int32_t dtype) {
  return dtype == STRATA_F16 ? f16_to_float(h) : bf16_to_float(h);
}
double value_of(float x, int32_t) { return x; }
double value_of(double x, int32_t) { return x; }

bool is_nan(uint16_t h, int32_t dtype) {
  return dtype == STRATA_F16 ? (h & 0x7fffu) > 0x7c00u : (h & 0x7fffu) > 0x7f80u;
}
bool is_nan(float x, int32_t) { return std::isnan(x); }
bool is_nan(double x, int32_t) { return std::isnan(x); }

template <class T>
std::string describe(T x, int32_t dtype) {
  char text[96];
  std::snprintf(text, sizeof text, "0x%0*llx (%.9g)", static_cast<int>(2 * sizeof(T)),
                static_cast<unsigned long long>(bits(x)), value_of(x, dtype));
  return text;
}

// Casts `in` with the plugin and compares with `reference`, element by element.
template <class Src, class Dst, class Ref>
Verdict compare_cast(const Instance<strata_precision_ops>& amp, int32_t from, int32_t to,
                     std::vector<Src> in, Ref reference) {
  std::vector<Dst> out(in.size());
  std::memset(out.data(), 0xa5, out.size() * sizeof(Dst));  // not a plausible result
  const strata_buffer src = sdk::host_buffer(in.data(), in.size(), from);
  const strata_buffer dst = sdk::host_buffer(out.data(), out.size(), to);
  strata_error err = sdk::make_error();
  const strata_status status = amp.ops().cast(amp.self(), &src, &dst, &err);
  const std::string pair = std::string(sdk::dtype_name(from)) + " to " + sdk::dtype_name(to);
  if (status == STRATA_ERR_UNSUPPORTED) return Verdict::skip(pair + " unsupported: " + err.message);
  expect_ok(status, err, "cast " + pair);
  size_t differing = 0, first = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Dst want = reference(in[i]);
    const bool same = is_nan(want, to) ? is_nan(out[i], to) : bits(want) == bits(out[i]);
    if (!same && differing++ == 0) first = i;
  }
  if (differing == 0) return Verdict::pass(std::to_string(in.size()) + " values");
  return Verdict::fail("element " + std::to_string(first) + ": input " + describe(in[first], from) +
                       ": expected " + describe(reference(in[first]), to) + ", got " +
                       describe(out[first], to) + " (" + std::to_string(differing) + " of " +
                       std::to_string(in.size()) + " elements differ)");
}

std::vector<uint16_t> all_16_bit_patterns() {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = static_cast<uint16_t>(i);
  return all;
}

// Floats that matter to any narrowing: zeros, infinities, NaNs with payloads, float subnormals,
// the extremes, and a million random bit patterns.
std::vector<float> common_floats() {
  std::vector<float> v;
  for (uint32_t u :
       {0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u,
        0xff800001u, 0x7fa00000u, 0x7fbfffffu, 0x7fffffffu, 0xffffffffu, 0x7f7fffffu, 0xff7fffffu,
        0x00800000u, 0x80800000u, 0x00000001u, 0x80000001u, 0x007fffffu, 0x807fffffu}) {
    v.push_back(bits_float(u));
  }
  for (uint32_t m = 1; m < 0x800000u; m = m * 3 + 1) v.push_back(bits_float(m));  // subnormals
  std::mt19937 rng(0x5eed);
  for (int i = 0; i < (1 << 20); ++i) v.push_back(bits_float(static_cast<uint32_t>(rng())));
  return v;
}

// Every value of the narrow type, as a float, and around every midpoint between neighbours: the
// midpoint itself (a tie, to even) and the floats one ulp below and above it.
template <class Widen>
void add_values_and_ties(std::vector<float>& v, Widen widen, uint32_t last_finite) {
  for (uint32_t h = 0; h <= last_finite; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const float lo = widen(static_cast<uint16_t>(h | sign));
      v.push_back(lo);
      const float hi = h == last_finite
                           ? 2.0f * std::abs(lo) - std::abs(widen(static_cast<uint16_t>(h - 1)))
                           : std::abs(widen(static_cast<uint16_t>(h + 1)));
      const float tie = (std::abs(lo) + hi) / 2.0f;  // exact: both have few mantissa bits
      for (float x : {std::nextafter(tie, 0.0f), tie, std::nextafter(tie, INFINITY)}) {
        v.push_back(sign != 0 ? -x : x);
      }
    }
  }
}

std::vector<double> doubles_for_narrowing() {
  std::vector<double> v = {0.0,       -0.0,         INFINITY,
                           -INFINITY, std::nan(""), -std::nan(""),
                           3.5e38,    -3.5e38,      3.4028235677973366e38,
                           1e-46,     7.006e-46,    1e-300};
  std::mt19937_64 rng(0xd0b1e);
  for (int i = 0; i < (1 << 18); ++i) {
    uint64_t u = rng();
    if (i % 2 == 0) u = (u & 0x800fffffffffffffull) | ((896ull + u % 256) << 52);  // float range
    double d;
    std::memcpy(&d, &u, sizeof d);
    v.push_back(d);
  }
  for (int i = 0; i < (1 << 16); ++i) {  // ties between neighbouring floats, and either side
    const float f = bits_float(static_cast<uint32_t>(rng()) & 0x7f7fffffu);
    const double tie =
        (static_cast<double>(f) + static_cast<double>(std::nextafter(f, INFINITY))) / 2;
    for (double x : {std::nextafter(tie, 0.0), tie, std::nextafter(tie, INFINITY)}) v.push_back(x);
  }
  return v;
}

}  // namespace

void check_casts(const Target& target, Recorder& recorder) {
  std::string why;
  const auto amp = any_instance(target, why);
  const char* const names[] = {"cast.f16_to_f32",  "cast.bf16_to_f32", "cast.f32_to_f16",
                               "cast.f32_to_bf16", "cast.f32_to_f64",  "cast.f64_to_f32"};
  if (amp == nullptr) {
    for (const char* name : names) recorder.record(name, Verdict::skip(why));
    return;
  }
  recorder.run(names[0], [&] {
    return compare_cast<uint16_t, float>(*amp, STRATA_F16, STRATA_F32, all_16_bit_patterns(),
                                         [](uint16_t h) { return f16_to_float(h); });
  });
  recorder.run(names[1], [&] {
    return compare_cast<uint16_t, float>(*amp, STRATA_BF16, STRATA_F32, all_16_bit_patterns(),
                                         [](uint16_t h) { return bf16_to_float(h); });
  });
  recorder.run(names[2], [&] {
    std::vector<float> in = common_floats();
    add_values_and_ties(in, f16_to_float, 0x7bffu);  // up to 65504, ties towards inf included
    for (float x : {65504.0f, 65519.0f, 65519.996f, 65520.0f, 65536.0f, 1e5f}) {
      in.push_back(x);
      in.push_back(-x);
    }
    return compare_cast<float, uint16_t>(*amp, STRATA_F32, STRATA_F16, std::move(in),
                                         [](float x) { return float_to_f16(x); });
  });
  recorder.run(names[3], [&] {
    std::vector<float> in = common_floats();
    add_values_and_ties(in, bf16_to_float, 0x7f7fu);
    return compare_cast<float, uint16_t>(*amp, STRATA_F32, STRATA_BF16, std::move(in),
                                         [](float x) { return float_to_bf16(x); });
  });
  recorder.run(names[4], [&] {
    return compare_cast<float, double>(*amp, STRATA_F32, STRATA_F64, common_floats(),
                                       [](float x) { return static_cast<double>(x); });
  });
  recorder.run(names[5], [&] {
    return compare_cast<double, float>(*amp, STRATA_F64, STRATA_F32, doubles_for_narrowing(),
                                       [](double x) { return static_cast<float>(x); });
  });
}

}  // namespace strata::plugin_check
