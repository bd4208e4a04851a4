// How a TestModel is bound to the Strata runtime, in one of two ways:
//  - host buffers: every parameter registered with the model's own data and grad buffers, no
//    groups (the API 1.0 way; the runtime reads and writes them directly);
//  - groups: gradients registered as NULL (the runtime provides them), one group per layer,
//    gathered around each forward and backward pass, every access through Runtime::view().
#pragma once

#include <memory>
#include <strata/strata.hpp>
#include <string>
#include <vector>

#include "test_model.hpp"

namespace strata::dptest {

enum class Binding { host_buffers, groups };
Binding parse_binding(const std::string& text);  // "host" or "groups"

class RuntimeBinding {
 public:
  // Registers the model's parameters (and groups), then finalizes. Collective.
  RuntimeBinding(Runtime& runtime, TestModel& model, Binding binding);

  // What train_batch passes through: the host's buffers or gathered runtime views.
  GroupAccess& access() { return *access_; }
  uint32_t index(std::size_t param) const { return indices_.at(param); }

  // Every parameter's current values in registration order. With groups each group is gathered
  // (collective at stage 3); with host buffers the model's own data is read.
  std::vector<std::vector<float>> snapshot();

  // Adds `delta` to element 0 of parameter 0 on this rank only (to check the divergence check).
  void perturb(float delta);

 private:
  Runtime& runtime_;
  TestModel& model_;
  Binding binding_;
  std::vector<uint32_t> indices_;  // runtime index of each model parameter
  std::vector<uint32_t> group_ids_;
  std::unique_ptr<GroupAccess> access_;
};

}  // namespace strata::dptest
