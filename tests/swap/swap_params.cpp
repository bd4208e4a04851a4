// swap_params — checks the Fashion-MNIST example's --dump-params files (param_file.hpp: raw floats,
// every parameter in registration order) for the swap test (run_swap.cmake):
//
//   swap_params finite FILE             exit 0 when FILE is the example MLP's size and all finite
//   swap_params same A B --tolerance T  exit 0 when, for every tensor (W1, b1, ...), max |a − b| /
//                                       max |a| <= T (compare_params.cpp's "tensor" metric)
//   swap_params differ A B --min M      exit 0 when some tensor's max |a − b| / max |a| >= M
//
// Both files must be finite and hold the example's 784-256-128-10 MLP (main.cpp); the tensors are
// cut by the model's own parameter list, so a dump of another shape is an error, not a pass.
// One summary line on stdout; exit 1 when the check fails, 2 on a usage or file error.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "mlp.hpp"
#include "param_file.hpp"

namespace {

struct Tensor {
  std::string name;
  std::size_t offset, size;
};

// The example's model: 784 inputs (28 × 28), hidden 256 and 128, 10 classes.
std::vector<Tensor> example_tensors() {
  const strata::fmnist::Mlp model({784, 256, 128, 10});
  std::vector<Tensor> tensors;
  std::size_t offset = 0;
  for (const strata::fmnist::Param& p : model.params()) {
    tensors.push_back({p.name, offset, p.data.size()});
    offset += p.data.size();
  }
  return tensors;
}

std::vector<float> load(const std::string& path, std::size_t expected) {
  std::vector<float> values = strata::fmnist::read_params(path);
  if (values.size() != expected) {
    throw std::runtime_error(path + ": " + std::to_string(values.size()) +
                             " floats, the example's MLP has " + std::to_string(expected));
  }
  const auto bad = std::count_if(values.begin(), values.end(),
                                 [](float v) { return !std::isfinite(v); });
  if (bad > 0) {
    throw std::runtime_error(path + ": " + std::to_string(bad) + " of " +
                             std::to_string(values.size()) + " values are not finite");
  }
  return values;
}

// max over tensors of max |a − b| / max |a|; `worst` names the tensor.
double relative_difference(const std::vector<Tensor>& tensors, const std::vector<float>& a,
                           const std::vector<float>& b, std::string& worst) {
  double result = -1;
  for (const Tensor& t : tensors) {
    double diff = 0, scale = 0;
    for (std::size_t i = t.offset; i < t.offset + t.size; ++i) {
      diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
      scale = std::max(scale, std::abs(static_cast<double>(a[i])));
    }
    const double rel = scale > 0 ? diff / scale : diff;
    if (rel > result) {
      result = rel;
      worst = t.name;
    }
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Check the Fashion-MNIST example's parameter dumps"};
  app.require_subcommand(1);
  std::string file, path_a, path_b;
  double tolerance = 0, minimum = 0;
  CLI::App* finite = app.add_subcommand("finite", "The dump is the MLP's size and finite");
  finite->add_option("file", file)->required();
  CLI::App* same = app.add_subcommand("same", "Every tensor within --tolerance (tensor-relative)");
  same->add_option("a", path_a)->required();
  same->add_option("b", path_b)->required();
  same->add_option("--tolerance", tolerance)->required();
  CLI::App* differ = app.add_subcommand("differ", "Some tensor differs by at least --min");
  differ->add_option("a", path_a)->required();
  differ->add_option("b", path_b)->required();
  differ->add_option("--min", minimum)->required();
  CLI11_PARSE(app, argc, argv);

  try {
    const std::vector<Tensor> tensors = example_tensors();
    const std::size_t count = tensors.back().offset + tensors.back().size;
    if (finite->parsed()) {
      load(file, count);
      std::printf("%s: %zu values in %zu tensors, all finite\n", file.c_str(), count,
                  tensors.size());
      return 0;
    }
    const std::vector<float> a = load(path_a, count), b = load(path_b, count);
    std::string worst;
    const double rel = relative_difference(tensors, a, b, worst);
    const bool ok = same->parsed() ? rel <= tolerance : rel >= minimum;
    if (rel == 0) worst = "none";
    std::printf("max tensor-relative difference %.3g (worst %s) %s %.3g\n", rel, worst.c_str(),
                same->parsed() ? (ok ? "<=" : ">") : (ok ? ">=" : "<"),
                same->parsed() ? tolerance : minimum);
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
