// The models the data-parallel tests train, behind one interface so a single host can drive them
// through host-owned buffers or through runtime groups and views (ZeRO stage 3).
//
// A model is a list of parameters (registration order) split into groups, one per layer. Its
// forward and backward passes reach a group's buffers only between GroupAccess::begin and end,
// one group at a time, in the same order on every rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace strata::dptest {

// One group's buffers for the duration of its forward or backward pass, in the order of the
// group's parameter list. grad is only set for backward; accumulate (+=) into it.
struct GroupBuffers {
  std::vector<const float*> data;
  std::vector<float*> grad;
};

class GroupAccess {
 public:
  virtual ~GroupAccess() = default;
  virtual GroupBuffers begin(std::size_t group, bool backward) = 0;
  virtual void end(std::size_t group, bool backward) = 0;
};

struct ParamSpec {
  std::string name;
  std::size_t count = 0;
};

struct GroupSpec {
  std::string name;
  std::vector<std::size_t> params;  // indices into TestModel::params()
};

class TestModel {
 public:
  virtual ~TestModel() = default;

  virtual std::vector<ParamSpec> params() const = 0;
  virtual std::vector<GroupSpec> groups() const = 0;
  virtual std::size_t inputs() const = 0;
  virtual std::size_t classes() const = 0;

  // The model's own host buffers: initial values, and the live parameters and gradients when
  // the runtime uses host-owned buffers.
  virtual float* data(std::size_t param) = 0;
  virtual float* grad(std::size_t param) = 0;

  // Deterministic in `seed` alone, so equal seeds give equal models on every rank.
  virtual void init(uint64_t seed) = 0;

  // Forward and backward on n samples through `access`: adds grad_multiplier × d(mean loss)/dθ
  // into the gradients and calls on_grad_ready(param) once each is complete. Returns the mean
  // cross-entropy loss.
  virtual double train_batch(GroupAccess& access, const float* x, const uint8_t* y, std::size_t n,
                             float grad_multiplier,
                             const std::function<void(std::size_t)>& on_grad_ready) = 0;
};

// The Fashion-MNIST example's MLP (examples/fashion_mnist), one group per dense layer.
std::unique_ptr<TestModel> make_example_mlp(std::vector<std::size_t> sizes);

// A small model whose parameter sizes are awkward for partitioning: 1, 7, 13, 61, 97, 91, 1261
// and 5917 elements (primes and products of primes), in four groups of unequal size.
std::unique_ptr<TestModel> make_odd_model();

std::unique_ptr<TestModel> make_model(const std::string& name);  // "mlp" or "odd"

// Whole-model size, for reports.
std::size_t total_elements(const TestModel& model);

}  // namespace strata::dptest
