#include "runtime_binding.hpp"

#include <stdexcept>

namespace strata::dptest {
namespace {

// The model's own buffers, whatever the group.
class HostAccess : public GroupAccess {
 public:
  HostAccess(TestModel& model, std::vector<GroupSpec> groups)
      : model_(model), groups_(std::move(groups)) {}

  GroupBuffers begin(std::size_t group, bool backward) override {
    GroupBuffers b;
    for (std::size_t p : groups_.at(group).params) {
      b.data.push_back(model_.data(p));
      b.grad.push_back(backward ? model_.grad(p) : nullptr);
    }
    return b;
  }
  void end(std::size_t, bool) override {}

 private:
  TestModel& model_;
  std::vector<GroupSpec> groups_;
};

// Gathers the group (FOR_BACKWARD in backward) and hands out the runtime's views; release() at
// end() so that a failure surfaces as an exception rather than a destructor's stderr line.
class ViewAccess : public GroupAccess {
 public:
  ViewAccess(Runtime& runtime, std::vector<GroupSpec> groups, std::vector<ParamSpec> params,
             std::vector<uint32_t> group_ids, std::vector<uint32_t> indices)
      : runtime_(runtime),
        groups_(std::move(groups)),
        params_(std::move(params)),
        group_ids_(std::move(group_ids)),
        indices_(std::move(indices)),
        gathered_(groups_.size()) {}

  GroupBuffers begin(std::size_t group, bool backward) override {
    const uint32_t flags = backward ? STRATA_GATHER_FOR_BACKWARD : 0u;
    gathered_.at(group) = std::make_unique<GatheredGroup>(runtime_, group_ids_.at(group), flags);
    GroupBuffers b;
    for (std::size_t p : groups_[group].params) {
      const ParamView v = runtime_.view(indices_.at(p));
      const std::string what = "view of '" + params_[p].name + "' in gathered group '" +
                               groups_[group].name + "'";
      if (v.data == nullptr) throw std::runtime_error(what + " has no data");
      if (v.dtype != STRATA_F32 || v.count != params_[p].count) {
        throw std::runtime_error(what + " is " + strata_dtype_name(v.dtype) + "[" +
                                 std::to_string(v.count) + "], expected f32[" +
                                 std::to_string(params_[p].count) + "]");
      }
      if (backward && v.grad == nullptr) {
        throw std::runtime_error(what + " lends no gradient buffer for backward");
      }
      b.data.push_back(static_cast<const float*>(v.data));
      b.grad.push_back(backward ? static_cast<float*>(v.grad) : nullptr);
    }
    return b;
  }

  void end(std::size_t group, bool) override {
    std::unique_ptr<GatheredGroup> guard = std::move(gathered_.at(group));
    if (guard) guard->release();
  }

 private:
  Runtime& runtime_;
  std::vector<GroupSpec> groups_;
  std::vector<ParamSpec> params_;
  std::vector<uint32_t> group_ids_;
  std::vector<uint32_t> indices_;
  std::vector<std::unique_ptr<GatheredGroup>> gathered_;
};

}  // namespace

Binding parse_binding(const std::string& text) {
  if (text == "host") return Binding::host_buffers;
  if (text == "groups") return Binding::groups;
  throw std::invalid_argument("unknown binding '" + text + "' (expected host or groups)");
}

RuntimeBinding::RuntimeBinding(Runtime& runtime, TestModel& model, Binding binding)
    : runtime_(runtime), model_(model), binding_(binding) {
  const std::vector<ParamSpec> params = model.params();
  for (std::size_t p = 0; p < params.size(); ++p) {
    float* grad = binding == Binding::host_buffers ? model.grad(p) : nullptr;
    indices_.push_back(runtime.register_param(params[p].name, model.data(p), grad, params[p].count));
  }
  if (binding == Binding::groups) {
    for (const GroupSpec& g : model.groups()) {
      std::vector<uint32_t> members;
      for (std::size_t p : g.params) members.push_back(indices_.at(p));
      group_ids_.push_back(runtime.define_group(g.name, members));
    }
  }
  runtime.finalize();
  if (binding == Binding::host_buffers) {
    access_ = std::make_unique<HostAccess>(model, model.groups());
  } else {
    access_ = std::make_unique<ViewAccess>(runtime, model.groups(), params, group_ids_, indices_);
  }
}

std::vector<std::vector<float>> RuntimeBinding::snapshot() {
  const std::vector<ParamSpec> params = model_.params();
  std::vector<std::vector<float>> values(params.size());
  if (binding_ == Binding::host_buffers) {
    for (std::size_t p = 0; p < params.size(); ++p) {
      values[p].assign(model_.data(p), model_.data(p) + params[p].count);
    }
    return values;
  }
  const std::vector<GroupSpec> groups = model_.groups();
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const GroupBuffers b = access_->begin(g, false);
    for (std::size_t k = 0; k < groups[g].params.size(); ++k) {
      const std::size_t p = groups[g].params[k];
      values[p].assign(b.data[k], b.data[k] + params[p].count);
    }
    access_->end(g, false);
  }
  return values;
}

void RuntimeBinding::perturb(float delta) {
  if (binding_ == Binding::host_buffers) {
    model_.data(0)[0] += delta;
    return;
  }
  // Through the view: at stages 0-2 it is the live parameter (at stage 3 a gathered copy, which
  // release discards, so the perturbation only shows at stages 0-2).
  const std::size_t group = 0;  // parameter 0 opens group 0 in every test model
  access_->begin(group, false);
  const ParamView v = runtime_.view(indices_.at(0));
  static_cast<float*>(v.data)[0] += delta;
  access_->end(group, false);
}

}  // namespace strata::dptest
