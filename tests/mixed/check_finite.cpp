// check_finite FILE — exits 0 when FILE (the example's --dump-params output: raw little-endian
// floats) is non-empty and every value in it is finite; else prints what is wrong and exits 1.
#include <cmath>
#include <cstdio>
#include <exception>

#include "param_file.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: check_finite PARAMS_FILE\n");
    return 2;
  }
  try {
    const std::vector<float> values = strata::fmnist::read_params(argv[1]);
    std::size_t bad = 0, first = 0;
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!std::isfinite(values[i]) && bad++ == 0) first = i;
    }
    if (values.empty() || bad > 0) {
      std::printf("%s: %zu values, %zu not finite (first at %zu)\n", argv[1], values.size(), bad,
                  first);
      return 1;
    }
    std::printf("%s: %zu values, all finite\n", argv[1], values.size());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "check_finite: %s\n", e.what());
    return 1;
  }
}
