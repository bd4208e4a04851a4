// compare_params A B [--metric M] [--tolerance T] — compares two parameter dumps (param_dump.hpp)
// tensor by tensor and prints, per tensor and overall, three measures of a difference d = a − b:
//   abs          max |d|
//   elementwise  max |d| / max(|a|, |b|) per element (0 where both are 0)
//   tensor       max |d| / max |a| over the tensor (the difference relative to the tensor's scale)
// Exit 1 if the names or sizes differ, a value is NaN, or the chosen metric exceeds T.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>

#include "param_dump.hpp"

namespace {

using strata::dptest::NamedTensor;

struct Measures {
  double abs = 0, elementwise = 0, tensor = 0;
  bool nan = false;
};

Measures measure(const std::vector<float>& a, const std::vector<float>& b) {
  Measures m;
  double scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = b[i], d = std::abs(x - y);
    if (std::isnan(d)) m.nan = true;
    m.abs = std::max(m.abs, d);
    const double mag = std::max(std::abs(x), std::abs(y));
    if (mag > 0) m.elementwise = std::max(m.elementwise, d / mag);
    scale = std::max(scale, std::abs(x));
  }
  m.tensor = scale > 0 ? m.abs / scale : m.abs;
  return m;
}

double pick(const Measures& m, const std::string& metric) {
  if (metric == "abs") return m.abs;
  if (metric == "elementwise") return m.elementwise;
  return m.tensor;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path_a, path_b, metric = "tensor";
  double tolerance = 1e-6;
  bool quiet = false;
  CLI::App app{"Compare two Strata parameter dumps"};
  app.add_option("a", path_a)->required();
  app.add_option("b", path_b)->required();
  app.add_option("--metric", metric, "abs, elementwise or tensor")
      ->check(CLI::IsMember({"abs", "elementwise", "tensor"}))
      ->capture_default_str();
  app.add_option("--tolerance", tolerance)->capture_default_str();
  app.add_flag("--quiet", quiet, "Only the summary line");
  CLI11_PARSE(app, argc, argv);
  try {
    const std::vector<NamedTensor> a = strata::dptest::read_dump(path_a);
    const std::vector<NamedTensor> b = strata::dptest::read_dump(path_b);
    if (a.size() != b.size()) {
      std::printf("%s has %zu tensors, %s has %zu\n", path_a.c_str(), a.size(), path_b.c_str(),
                  b.size());
      return 1;
    }
    Measures total;
    std::string worst;
    double worst_value = -1;
    for (std::size_t t = 0; t < a.size(); ++t) {
      if (a[t].name != b[t].name || a[t].values.size() != b[t].values.size()) {
        std::printf("tensor %zu: %s[%zu] vs %s[%zu]\n", t, a[t].name.c_str(), a[t].values.size(),
                    b[t].name.c_str(), b[t].values.size());
        return 1;
      }
      const Measures m = measure(a[t].values, b[t].values);
      if (!quiet) {
        std::printf("  %-12s n=%-8zu abs %.3g  elementwise %.3g  tensor %.3g\n",
                    a[t].name.c_str(), a[t].values.size(), m.abs, m.elementwise, m.tensor);
      }
      total.abs = std::max(total.abs, m.abs);
      total.elementwise = std::max(total.elementwise, m.elementwise);
      total.tensor = std::max(total.tensor, m.tensor);
      total.nan = total.nan || m.nan;
      if (pick(m, metric) > worst_value) {
        worst_value = pick(m, metric);
        worst = a[t].name;
      }
    }
    const bool ok = !total.nan && pick(total, metric) <= tolerance;
    std::printf("max abs %.3g elementwise %.3g tensor %.3g%s; %s metric %.3g (worst %s) %s %.3g\n",
                total.abs, total.elementwise, total.tensor, total.nan ? " NaN" : "",
                metric.c_str(), pick(total, metric), worst.c_str(), ok ? "<=" : ">", tolerance);
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
