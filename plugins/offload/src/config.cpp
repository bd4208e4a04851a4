// Parsing and validation of {"optimizer": {...}, "offload_optimizer": {...}, ...}. Every error names
// the JSON path of the offending key and what was expected there.
#include "config.hpp"

#include <string>

#include <strata/plugin.hpp>
#include <strata_common/config_reader.hpp>
#include "offload_config.hpp"

namespace strata::offload {
namespace {

using namespace common::config;

void read_betas(ObjectReader& params, double& beta1, double& beta2) {
  const json* v = params.find("betas");
  if (v == nullptr) return;
  auto in_range = [](const json& b) {
    return b.is_number() && b.get<double>() >= 0.0 && b.get<double>() < 1.0;
  };
  if (!v->is_array() || v->size() != 2 || !in_range((*v)[0]) || !in_range((*v)[1])) {
    invalid(params.path("betas"), "expected two numbers in [0, 1), got " + v->dump());
  }
  beta1 = (*v)[0].get<double>();
  beta2 = (*v)[1].get<double>();
}

SgdConfig read_sgd(ObjectReader& params) {
  SgdConfig sgd;
  const json* lr = params.find("lr");
  if (lr == nullptr) invalid(params.path("lr"), "required for SGD (a positive finite number)");
  sgd.lr = params.positive("lr", 0.0);
  sgd.momentum = params.non_negative("momentum", sgd.momentum);
  sgd.dampening = params.number(
      "dampening", sgd.dampening, [](double x) { return std::isfinite(x); }, "a finite number");
  sgd.weight_decay = params.non_negative("weight_decay", sgd.weight_decay);
  sgd.nesterov = params.boolean("nesterov", sgd.nesterov);
  if (sgd.nesterov && (sgd.momentum <= 0.0 || sgd.dampening != 0.0)) {
    invalid(params.path("nesterov"), "requires momentum > 0 and dampening 0, got momentum " +
                                         json(sgd.momentum).dump() + " and dampening " +
                                         json(sgd.dampening).dump());
  }
  return sgd;
}

AdamConfig read_adam(ObjectReader& params, OptimizerKind kind) {
  AdamConfig adam;
  adam.weight_decay = kind == OptimizerKind::adamw ? 0.01 : 0.0;  // torch.optim.AdamW's default
  adam.lr = params.positive("lr", adam.lr);
  read_betas(params, adam.beta1, adam.beta2);
  adam.eps = params.positive("eps", adam.eps);
  adam.weight_decay = params.non_negative("weight_decay", adam.weight_decay);
  adam.bias_correction = params.boolean("bias_correction", adam.bias_correction);
  adam.decoupled_weight_decay = params.boolean("adam_w_mode", true);
  if (kind == OptimizerKind::adamw && !adam.decoupled_weight_decay) {
    invalid(params.path("adam_w_mode"),
            "AdamW always decouples weight decay; use type Adam for adam_w_mode false");
  }
  return adam;
}

LionConfig read_lion(ObjectReader& params) {
  LionConfig lion;
  lion.lr = params.positive("lr", lion.lr);
  read_betas(params, lion.beta1, lion.beta2);
  lion.weight_decay = params.non_negative("weight_decay", lion.weight_decay);
  return lion;
}

OptimizerKind read_kind(ObjectReader& block) {
  const json* type = block.find("type");
  const std::string path = block.path("type");
  if (type == nullptr) invalid(path, "missing; expected one of Adam, AdamW, SGD, Lion");
  if (!type->is_string()) {
    invalid(path, "expected one of Adam, AdamW, SGD, Lion, got " + type->dump());
  }
  const std::string name = lower(type->get<std::string>());
  if (name == "sgd") return OptimizerKind::sgd;
  if (name == "adam") return OptimizerKind::adam;
  if (name == "adamw") return OptimizerKind::adamw;
  if (name == "lion") return OptimizerKind::lion;
  invalid(path, "unsupported optimizer " + type->dump() +
                    "; supported: Adam, AdamW, SGD, Lion (case-insensitive)");
}

OptimizerConfig read_optimizer(const json& root) {
  auto it = root.find("optimizer");
  if (it == root.end() || it->is_null()) {
    invalid("optimizer",
            R"(missing; expected an object like {"type": "AdamW", "params": {"lr": 0.001}})");
  }
  ObjectReader block(*it, "optimizer");
  OptimizerConfig config;
  config.kind = read_kind(block);
  const json* params_json = block.find("params");
  block.reject_unknown("");
  const json empty = json::object();
  ObjectReader params(params_json == nullptr ? empty : *params_json, "optimizer.params");
  switch (config.kind) {
    case OptimizerKind::sgd:
      config.sgd = read_sgd(params);
      break;
    case OptimizerKind::adam:
    case OptimizerKind::adamw:
      config.adam = read_adam(params, config.kind);
      break;
    case OptimizerKind::lion:
      config.lion = read_lion(params);
      break;
  }
  params.reject_unknown(std::string(" for ") + optimizer_name(config.kind));
  return config;
}

}  // namespace

OptimizerConfig parse_offload_config(std::string_view json_text) {
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) invalid("config", "not valid JSON");
  if (!root.is_object()) invalid("config", "expected a JSON object, got " + root.dump());
  OptimizerConfig config = read_optimizer(root);
  config.offload = read_offload(root);
  // Checked last so that a missing or malformed optimizer block is the error reported first.
  for (const auto& item : root.items()) {
    if (item.key() != "optimizer" && item.key() != "offload_optimizer" &&
        item.key() != "offload_param" && item.key() != "sub_group_size" &&
        item.key() != "fused_copy_out") {
      invalid(item.key(),
              "unknown key in the offload config; expected optimizer, offload_optimizer, "
              "offload_param, sub_group_size, fused_copy_out");
    }
  }
  return config;
}

const char* optimizer_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::sgd:
      return "sgd";
    case OptimizerKind::adam:
      return "adam";
    case OptimizerKind::adamw:
      return "adamw";
    case OptimizerKind::lion:
      return "lion";
  }
  return "unknown";
}

}  // namespace strata::offload
