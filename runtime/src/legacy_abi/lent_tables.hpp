// The 1.2-layout comm and precision tables a legacy plugin finds in its host-services table:
// each forwards to the current instance named by its self, a Link.
#pragma once

#include "legacy_api.hpp"

namespace strata::rt::legacy {

// NULL where the current comm has NULL, so a 1.2 plugin that checks sees what is supported.
v1_2::strata_comm_ops lent_comm_table(const strata_comm_ops& current);
const v1_2::strata_precision_ops& lent_precision_table();

}  // namespace strata::rt::legacy
