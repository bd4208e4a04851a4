// The precision stratum's check groups (precision.cpp runs them in this order).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "check.hpp"
#include "precision/instance.hpp"

namespace strata::plugin_check {

void check_loss_scale(const Target& target, Recorder& recorder);  // loss_scale.*
void check_casts(const Target& target, Recorder& recorder);       // cast.*
void check_grad_stats(const Target& target, Recorder& recorder);  // grad_stats.*

// The configs the precision checks create the plugin with, blocks the scenario does not use
// switched off explicitly (so that a user's --config cannot switch them on).
nlohmann::json fp32_config();
nlohmann::json bf16_config();
// fp32_config(), bf16_config() and fp16 with dynamic loss scaling, in that order.
std::vector<nlohmann::json> format_configs();

// The instance's loss_scale() and caps (query()); throw when the call fails.
double scale_of(const Instance<strata_precision_ops>& amp);
strata_precision_caps caps_of(const Instance<strata_precision_ops>& amp);

// An instance for the checks that do not depend on the number format (casts, grad_stats): the
// first of the fp32, bf16 and fp16 configs that create accepts; null (and `why` the refusals)
// when none is.
std::unique_ptr<Instance<strata_precision_ops>> any_instance(const Target& target,
                                                             std::string& why);

}  // namespace strata::plugin_check
