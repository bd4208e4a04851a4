// compare_params A B TOLERANCE — max |A[i] − B[i]| over two raw parameter dumps; exit 1 if the
// sizes differ or the maximum exceeds TOLERANCE.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "param_file.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: compare_params A B TOLERANCE\n");
    return 2;
  }
  try {
    const auto a = strata::fmnist::read_params(argv[1]);
    const auto b = strata::fmnist::read_params(argv[2]);
    const double tolerance = std::strtod(argv[3], nullptr);
    if (a.size() != b.size()) {
      std::printf("%s has %zu values, %s has %zu\n", argv[1], a.size(), argv[2], b.size());
      return 1;
    }
    double max_diff = 0.0;
    std::size_t worst = 0, differing = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double d = std::abs(double(a[i]) - double(b[i]));
      if (d > 0) ++differing;
      if (!(d <= max_diff)) {  // also catches NaN
        max_diff = d;
        worst = i;
      }
    }
    std::printf("max |diff| %.3g at index %zu (%zu of %zu values differ), tolerance %.3g\n",
                max_diff, worst, differing, a.size(), tolerance);
    return max_diff <= tolerance ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
