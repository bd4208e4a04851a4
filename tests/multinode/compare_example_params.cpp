// compare_example_params A B [TOLERANCE] — compares two parameter dumps of the Fashion-MNIST
// example (--dump-params: raw floats of the 784-256-128-10 MLP's tensors in order) tensor by
// tensor, with compare_params' "tensor" metric: max |a - b| / max |a| over each tensor (the
// difference relative to the tensor's scale; per-element relative errors mean nothing for values
// that pass near zero). Prints one line per tensor and exits 1 when the sizes differ from the
// model's, a value is NaN, or any tensor's figure exceeds TOLERANCE (default 1e-6).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#include "mlp.hpp"
#include "param_file.hpp"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    std::fprintf(stderr, "usage: compare_example_params A B [TOLERANCE]\n");
    return 2;
  }
  const double tolerance = argc == 4 ? std::strtod(argv[3], nullptr) : 1e-6;
  try {
    const std::vector<float> a = strata::fmnist::read_params(argv[1]);
    const std::vector<float> b = strata::fmnist::read_params(argv[2]);
    const strata::fmnist::Mlp model({784, 256, 128, 10});  // the example's default --hidden
    std::size_t total = 0;
    for (const auto& p : model.params()) total += p.data.size();
    if (a.size() != total || b.size() != total) {
      std::printf("sizes: %s has %zu values, %s has %zu, the model %zu\n", argv[1], a.size(),
                  argv[2], b.size(), total);
      return 1;
    }
    std::size_t offset = 0;
    double worst = 0;
    bool nan = false;
    for (const auto& p : model.params()) {
      double diff = 0, scale = 0;
      for (std::size_t i = offset; i < offset + p.data.size(); ++i) {
        const double d = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
        if (std::isnan(d)) nan = true;
        diff = std::max(diff, d);
        scale = std::max(scale, std::abs(static_cast<double>(a[i])));
      }
      const double relative = scale > 0 ? diff / scale : diff;
      worst = std::max(worst, relative);
      std::printf("  %-4s n=%-7zu max|diff| %.3g  tensor-relative %.3g\n", p.name.c_str(),
                  p.data.size(), diff, relative);
      offset += p.data.size();
    }
    const bool pass = !nan && worst <= tolerance;
    std::printf("%s: worst tensor-relative difference %.3g%s (tolerance %g)\n",
                pass ? "match" : "MISMATCH", worst, nan ? ", NaN present" : "", tolerance);
    return pass ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "compare_example_params: %s\n", e.what());
    return 1;
  }
}
