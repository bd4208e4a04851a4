// Parameters against the stage-0 reference, with the tolerance the project's ZeRO equivalence
// tests use (tests/dp/CMakeLists.txt, compare_params.cpp's "tensor" metric): per parameter,
// max |got - expected| <= 1e-6 x max |expected| over that parameter. The differences it allows
// are rounding (stage 0 allreduces once per step, partitioned stages reduce-scatter and sum in
// other orders); a missed, doubled or misplaced update is orders of magnitude above it.
#pragma once

#include "sharding/synthetic_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

namespace strata::plugin_check::sharding {

inline constexpr double kTolerance = 1e-6;

// The first element (parameter by parameter, in registration order) beyond the tolerance, or
// nullopt. A NaN in `got` is always a difference.
inline std::optional<std::string> first_difference(const Values& expected, const Values& got) {
  for (std::size_t p = 0; p < expected.size(); ++p) {
    const ParamSpec& spec = model_params()[p];
    if (p >= got.size() || got[p].size() != expected[p].size()) {
      return "parameter '" + spec.name + "': " +
             std::to_string(p < got.size() ? got[p].size() : 0) + " values read, expected " +
             std::to_string(expected[p].size());
    }
    double scale = 0;
    for (float v : expected[p]) scale = std::max(scale, std::fabs(double(v)));
    const double limit = kTolerance * scale;
    for (std::size_t i = 0; i < expected[p].size(); ++i) {
      const double difference = std::fabs(double(got[p][i]) - double(expected[p][i]));
      if (difference <= limit) continue;  // false for NaN
      char text[320];
      std::snprintf(text, sizeof text,
                    "parameter '%s' element %zu (of %zu): expected %.9g, got %.9g "
                    "(|difference| %.3g > %.0e x %.3g, the parameter's largest |value|)",
                    spec.name.c_str(), i, spec.count, double(expected[p][i]), double(got[p][i]),
                    difference, kTolerance, scale);
      return std::string(text);
    }
  }
  return std::nullopt;
}

// The largest difference relative to its parameter's largest |value| (the measure compared
// with kTolerance), over every parameter of equal size in both.
inline double largest_difference(const Values& expected, const Values& got) {
  double largest = 0;
  for (std::size_t p = 0; p < expected.size() && p < got.size(); ++p) {
    if (got[p].size() != expected[p].size()) continue;
    double scale = 0, difference = 0;
    for (std::size_t i = 0; i < expected[p].size(); ++i) {
      scale = std::max(scale, std::fabs(double(expected[p][i])));
      difference = std::max(difference, std::fabs(double(got[p][i]) - double(expected[p][i])));
    }
    largest = std::max(largest, scale > 0 ? difference / scale : difference);
  }
  return largest;
}

}  // namespace strata::plugin_check::sharding
