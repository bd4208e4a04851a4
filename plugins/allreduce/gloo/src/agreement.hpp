// Before each collective the ranks exchange what they are about to do (a small header: the kind,
// dtype, op, count, root and a digest of allgatherv's counts) and compare. Gloo itself would hang
// until the timeout, or read past a block, when ranks disagree; with the check, every rank fails
// the call alike with STRATA_ERR_MISMATCH and a sentence such as "rank 0 called allreduce SUM of 10
// f32, rank 1 called allreduce SUM of 11 f32". Costs one small allgather per collective.
#pragma once

#include <gloo/context.h>

#include <chrono>
#include <cstdint>
#include <memory>

namespace strata::allreduce_gloo {

struct CallHeader {
  int32_t kind = 0;  // strata_collective
  int32_t dtype = -1;
  int32_t op = -1;
  int32_t root = -1;
  uint64_t count = 0;
  uint64_t digest = 0;  // allgatherv: FNV-1a of recv_counts and displs
};

// Throws sdk::Error(STRATA_ERR_MISMATCH) when some rank's header differs from rank 0's.
void check_agreement(const std::shared_ptr<gloo::Context>& world, const CallHeader& mine,
                     std::chrono::milliseconds timeout);

uint64_t digest(const uint64_t* values, size_t count, uint64_t seed = 1469598103934665603ull);

}  // namespace strata::allreduce_gloo
