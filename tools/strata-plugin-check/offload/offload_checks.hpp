// The offload stratum's checks and what they share (offload.cpp runs them).
#pragma once

#include <string>

#include "check.hpp"
#include "offload/lockstep.hpp"

namespace strata::plugin_check {

// The case's block as {"optimizer": ...}, merged with the user's --config.
std::string config_for(const Target& target, const OptimizerCase& c);
// Whether the plugin's ops table is of ABI 1.6 or later: it reads the step's lr, momentum and
// beta2, and reports the configured lr and momentum in its caps.
bool reads_v16(const Instance<strata_offload_ops>& plugin);
// query()'s caps; lr and momentum NaN, writes_model_copy -1 unless the plugin writes them.
strata_offload_caps caps_of(const Instance<strata_offload_ops>& plugin);

Verdict model_copy(const Target& target, const OptimizerCase& c);   // model_copy.cpp
Verdict state_slots(const Target& target, const OptimizerCase& c);  // state_slots.cpp

}  // namespace strata::plugin_check
