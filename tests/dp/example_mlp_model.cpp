// The example's MLP as a TestModel: its LayerAccess hook is routed to the test's GroupAccess, so
// the very code the example trains with runs under every buffer arrangement the tests choose.
#include <stdexcept>

#include "mlp.hpp"
#include "test_model.hpp"

namespace strata::dptest {
namespace {

// Layer l of the MLP is group l, whose parameters are W(l+1) and b(l+1).
class LayerAdapter : public fmnist::LayerAccess {
 public:
  explicit LayerAdapter(GroupAccess& access) : access_(access) {}

  fmnist::LayerBuffers begin(std::size_t layer, bool backward) override {
    const GroupBuffers g = access_.begin(layer, backward);
    fmnist::LayerBuffers b;
    b.weight = g.data.at(0);
    b.bias = g.data.at(1);
    if (backward) {
      b.weight_grad = g.grad.at(0);
      b.bias_grad = g.grad.at(1);
    }
    return b;
  }
  void end(std::size_t layer, bool backward) override { access_.end(layer, backward); }

 private:
  GroupAccess& access_;
};

class ExampleMlp : public TestModel {
 public:
  explicit ExampleMlp(std::vector<std::size_t> sizes) : mlp_(std::move(sizes)) {}

  std::vector<ParamSpec> params() const override {
    std::vector<ParamSpec> specs;
    for (const fmnist::Param& p : mlp_.params()) specs.push_back({p.name, p.data.size()});
    return specs;
  }
  std::vector<GroupSpec> groups() const override {
    std::vector<GroupSpec> groups;
    for (std::size_t l = 0; l < mlp_.layers(); ++l) {
      groups.push_back({"fc" + std::to_string(l + 1), {2 * l, 2 * l + 1}});
    }
    return groups;
  }
  std::size_t inputs() const override { return mlp_.inputs(); }
  std::size_t classes() const override { return mlp_.classes(); }
  float* data(std::size_t param) override { return mlp_.params().at(param).data.data(); }
  float* grad(std::size_t param) override { return mlp_.params().at(param).grad.data(); }
  void init(uint64_t seed) override { mlp_.init(seed); }

  double train_batch(GroupAccess& access, const float* x, const uint8_t* y, std::size_t n,
                     float grad_multiplier,
                     const std::function<void(std::size_t)>& on_grad_ready) override {
    LayerAdapter adapter(access);
    mlp_.set_access(&adapter);
    try {
      const double loss = mlp_.train_batch(x, y, n, grad_multiplier, on_grad_ready);
      mlp_.set_access(nullptr);
      return loss;
    } catch (...) {
      mlp_.set_access(nullptr);
      throw;
    }
  }

 private:
  fmnist::Mlp mlp_;
};

}  // namespace

std::unique_ptr<TestModel> make_example_mlp(std::vector<std::size_t> sizes) {
  return std::make_unique<ExampleMlp>(std::move(sizes));
}

std::unique_ptr<TestModel> make_model(const std::string& name) {
  // The example's default topology (examples/fashion_mnist/src/main.cpp).
  if (name == "mlp") return make_example_mlp({784, 256, 128, 10});
  if (name == "odd") return make_odd_model();
  throw std::invalid_argument("unknown model '" + name + "' (expected mlp or odd)");
}

std::size_t total_elements(const TestModel& model) {
  std::size_t total = 0;
  for (const ParamSpec& p : model.params()) total += p.count;
  return total;
}

}  // namespace strata::dptest
