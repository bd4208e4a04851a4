// The real amp plugin as the precision stratum of the strata_zero dtype tests (its casts are what
// the zero plugin calls), and scalar reference conversions from the SDK to check them against.
#pragma once

#include "zero_test_support.hpp"

#include <strata/half.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace strata::zero_test {

// An f16 or bf16 strata_amp instance, created once per test.
class AmpPrecision {
 public:
  explicit AmpPrecision(int32_t dtype) {
    const std::string config = std::string(R"({"dtype": ")") +
                               (dtype == STRATA_F16 ? "fp16" : "bf16") + R"("})";
    strata_error err = sdk::make_error();
    if (library().create<strata_precision_ops>(config.c_str(), host_.api(), &self_, &err) !=
        STRATA_OK) {
      throw std::runtime_error(std::string("amp create: ") + err.message);
    }
  }
  ~AmpPrecision() { ops().destroy(self_); }
  AmpPrecision(const AmpPrecision&) = delete;
  AmpPrecision& operator=(const AmpPrecision&) = delete;

  static const test::PluginLibrary& library() {
    static test::PluginLibrary library(STRATA_TEST_AMP_PLUGIN);
    return library;
  }
  static const strata_precision_ops& ops() { return library().ops<strata_precision_ops>(); }
  void* self() const { return self_; }
  // Makes this instance `host`'s precision stratum.
  void serve(RecordingHost& host) const {
    host.api()->precision = &ops();
    host.api()->precision_self = self_;
  }

 private:
  test::FakeHost host_;
  void* self_ = nullptr;
};

// Round to nearest even (the SDK's scalar reference), and back (exact).
inline uint16_t to_half(float f, int32_t dtype) {
  return dtype == STRATA_F16 ? float_to_f16(f) : float_to_bf16(f);
}
inline float from_half(uint16_t h, int32_t dtype) {
  return dtype == STRATA_F16 ? f16_to_float(h) : bf16_to_float(h);
}

inline std::string dtype_label(int32_t dtype) { return dtype == STRATA_F16 ? "f16" : "bf16"; }

}  // namespace strata::zero_test
