// The checks every plugin gets before its stratum's: the descriptor and ops table as the
// runtime's loader reads them (docs/DESIGN.md, "ABI rules"). They run in the parent process.
#pragma once

#include "check.hpp"

#include <string>
#include <utility>
#include <vector>

namespace strata::plugin_check {

struct DescriptorReport {
  std::vector<std::pair<std::string, Verdict>> checks;  // "descriptor.abi", ...
  bool usable = false;  // the stratum's checks can run (nothing above failed that they rely on)
  std::string stratum;  // "comm", "sharding", "precision", "offload"; empty for an unknown kind
};

DescriptorReport check_descriptor(const strata_plugin_descriptor& descriptor);

}  // namespace strata::plugin_check
