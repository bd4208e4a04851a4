#include "sharding/training_run.hpp"

#include "sharding/compare.hpp"

#include <strata/strata.hpp>

#include <string>
#include <utility>

namespace strata::plugin_check::sharding {
namespace {

// Groups over the synthetic model's parameters: two small ones together, two middling ones, and
// the large one alone (so stage 3 partitions a group of its own).
struct GroupSpec {
  const char* name;
  std::vector<std::size_t> params;
};
const std::vector<GroupSpec>& model_groups() {
  static const std::vector<GroupSpec> groups = {
      {"small", {0, 1}}, {"middle", {2, 3}}, {"large", {4}}};
  return groups;
}

nlohmann::json manifest(const Libraries& libraries, const RunSpec& spec) {
  return {
      {"comm", {{"library", libraries.comm}}},
      {"sharding",
       {{"library", spec.sharding_library},
        {"config", nlohmann::json::parse(spec.sharding_config)}}},
      {"precision", {{"library", libraries.precision}}},  // fp32: no scaling, no model copies
      {"offload", {{"library", libraries.offload}}},
      {"train_micro_batch_size_per_gpu", 1},
      {"gradient_accumulation_steps", spec.accumulation},
      {"gradient_clipping", spec.clipping},
      {"optimizer", spec.optimizer},
  };
}

class Trainer {
 public:
  Trainer(strata::Runtime& runtime, const RunSpec& spec, Values& data, Values& grads)
      : runtime_(runtime), spec_(spec), data_(data), grads_(grads) {}

  RunResult run() {
    RunResult result;
    const strata::WorldInfo world = runtime_.world();
    result.rank = rank_ = world.rank;
    result.world_size = world.size;
    const auto& params = model_params();
    for (std::size_t p = 0; p < params.size(); ++p) {
      float* grad = spec_.groups ? nullptr : grads_[p].data();
      indices_.push_back(runtime_.register_param(params[p].name, data_[p].data(), grad,
                                                 params[p].count));
    }
    if (spec_.groups) {
      for (const GroupSpec& g : model_groups()) {
        std::vector<uint32_t> members;
        for (std::size_t p : g.params) members.push_back(indices_[p]);
        group_ids_.push_back(runtime_.define_group(g.name, members));
      }
    }
    runtime_.finalize();
    for (uint64_t step = 1; step <= spec_.steps; ++step) {
      step_ = step;
      strata::StepResult outcome;
      for (uint64_t micro = 0; micro < spec_.accumulation; ++micro) {
        const std::string when = "step " + std::to_string(step) + " micro-batch " +
                                 std::to_string(micro + 1) + ": ";
        const Values current = read_values(when + "forward");
        if (spec_.expected != nullptr && micro == 0) {
          if (auto diff = first_difference(spec_.expected->at(step - 1), current)) {
            note(when + "forward read through the gathered views: " + *diff);
          }
        }
        backward(current, (step - 1) * spec_.accumulation + micro, micro == 0, when);
        outcome = runtime_.step();
      }
      StepRecord record;
      record.outcome = outcome.outcome;
      record.grad_norm = outcome.grad_norm;
      record.values = read_values("after step " + std::to_string(step));
      result.steps.push_back(std::move(record));
    }
    result.problem = problem_;
    result.problem_step = problem_step_;
    return result;
  }

 private:
  void note(const std::string& what) {
    if (!problem_.empty()) return;
    problem_ = what;
    problem_step_ = step_;
  }

  // The view of parameter p if it holds the parameter's f32 values, else nullptr (noted).
  const float* readable(std::size_t p, const strata_param_view& view, const std::string& when) {
    const ParamSpec& spec = model_params()[p];
    if (view.data == nullptr) {
      note(when + ": the view of '" + spec.name + "' has no data" +
           (spec_.groups ? " while its group is gathered" : " (no groups are defined)"));
      return nullptr;
    }
    if (view.count != spec.count || view.dtype != STRATA_F32) {
      note(when + ": the view of '" + spec.name + "' is " + strata_dtype_name(view.dtype) + "[" +
           std::to_string(view.count) + "], expected f32[" + std::to_string(spec.count) + "]");
      return nullptr;
    }
    return static_cast<const float*>(view.data);
  }

  // Every parameter's current values through the runtime's views (gathering each group around
  // its reads when there are groups); zeros where a view could not be read.
  Values read_values(const std::string& when) {
    Values values;
    for (const ParamSpec& spec : model_params()) values.emplace_back(spec.count, 0.0f);
    auto read = [&](std::size_t p) {
      if (const float* data = readable(p, runtime_.view(indices_[p]), when)) {
        values[p].assign(data, data + model_params()[p].count);
      }
    };
    if (!spec_.groups) {
      for (std::size_t p = 0; p < values.size(); ++p) read(p);
      return values;
    }
    for (std::size_t g = 0; g < model_groups().size(); ++g) {
      runtime_.gather(group_ids_[g], 0);
      for (std::size_t p : model_groups()[g].params) read(p);
      runtime_.release(group_ids_[g]);
    }
    return values;
  }

  // Accumulates this micro-batch's gradients (from the values forward read), last parameter
  // first as a backward pass would, announcing each with grad_ready.
  void backward(const Values& current, uint64_t micro, bool after_boundary,
                const std::string& when) {
    const double scale = runtime_.loss_scale() / double(spec_.accumulation);
    auto accumulate = [&](std::size_t p, float* grad) {
      for (std::size_t i = 0; i < current[p].size(); ++i) {
        grad[i] += static_cast<float>(scale * gradient(p, i, current[p][i], rank_, micro));
      }
      runtime_.grad_ready(indices_[p]);
    };
    if (!spec_.groups) {
      for (std::size_t p = current.size(); p-- > 0;) accumulate(p, grads_[p].data());
      return;
    }
    for (std::size_t g = model_groups().size(); g-- > 0;) {
      runtime_.gather(group_ids_[g], STRATA_GATHER_FOR_BACKWARD);
      const std::vector<std::size_t>& members = model_groups()[g].params;
      for (auto it = members.rbegin(); it != members.rend(); ++it) {
        const std::size_t p = *it;
        const strata_param_view view = runtime_.view(indices_[p]);
        const ParamSpec& spec = model_params()[p];
        if (view.grad == nullptr || view.count != spec.count || view.dtype != STRATA_F32) {
          note(when + "backward: gathered for backward, '" + spec.name +
               "' lends no f32[" + std::to_string(spec.count) + "] gradient buffer");
          runtime_.grad_ready(indices_[p]);
          continue;
        }
        auto* grad = static_cast<float*>(view.grad);
        // strata.h: gather FOR_BACKWARD lends zeroed buffers; after a boundary nothing is
        // accumulated yet.
        for (std::size_t i = 0; after_boundary && i < spec.count; ++i) {
          if (grad[i] != 0.0f) {
            note(when + "backward: the gradient buffer lent for '" + spec.name +
                 "' is not zeroed (element " + std::to_string(i) + " holds " +
                 std::to_string(grad[i]) + ")");
            break;
          }
        }
        accumulate(p, grad);
      }
      runtime_.release(group_ids_[g]);
    }
  }

  strata::Runtime& runtime_;
  const RunSpec& spec_;
  Values& data_;
  Values& grads_;
  int rank_ = 0;
  std::vector<uint32_t> indices_;
  std::vector<uint32_t> group_ids_;
  uint64_t step_ = 0;  // the step in progress, 1-based
  std::string problem_;
  uint64_t problem_step_ = 0;
};

}  // namespace

RunResult train(const Libraries& libraries, const RunSpec& spec) {
  // The host's buffers outlive the runtime (declared first, destroyed last).
  Values data = initial_values();
  Values grads;
  for (const std::vector<float>& v : data) grads.emplace_back(spec.groups ? 0 : v.size(), 0.0f);
  strata::Runtime runtime = strata::Runtime::from_json(manifest(libraries, spec).dump());
  return Trainer(runtime, spec, data, grads).run();
}

}  // namespace strata::plugin_check::sharding
