// A rank that registered different parameters or groups would issue different collectives and
// hang or corrupt memory; one small collective at finalize turns that into an error saying what
// differs (STRATA_ERR_MISMATCH).
#pragma once

#include "bucket_plan.hpp"
#include "comm_link.hpp"
#include "param.hpp"

#include <vector>

namespace strata::zero {

// `persistent` is the number of bucketed parameters kept whole (stages 1-3: all but stage 3's
// partitioned ones; 0 at stage 0).
void check_ranks_agree(CommLink& comm, const std::vector<ParamRecord>& params,
                       const std::vector<GroupRecord>& groups, const BucketPlan& plan,
                       size_t persistent);

}  // namespace strata::zero
