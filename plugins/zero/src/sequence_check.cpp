#include "sequence_check.hpp"

#include <strata/plugin.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace strata::zero {

namespace {
constexpr size_t kFields = 5;  // op, group, flags, call number, startable buckets
constexpr size_t kCompared = 4;
}  // namespace

std::string SequenceCheck::describe(const int64_t* entry) const {
  switch (static_cast<SequenceOp>(entry[0])) {
    case SequenceOp::kGather:
      return std::string("gathers ") + groups_.describe(entry[1]) +
             ((entry[2] & STRATA_GATHER_FOR_BACKWARD) != 0 ? " for backward" : "") +
             ((entry[2] & STRATA_GATHER_FOR_WRITE) != 0 ? " for write" : "");
    case SequenceOp::kRelease:
      return "releases " + groups_.describe(entry[1]);
    case SequenceOp::kEndMicroStep:
      return entry[2] != 0 ? "ends the micro-batch (accumulation boundary)"
                           : "ends the micro-batch";
  }
  return "makes unknown call " + std::to_string(entry[0]);
}

uint64_t SequenceCheck::agree(SequenceOp op, int64_t group, uint32_t flags, uint64_t startable) {
  const int64_t call = ++calls_;
  const std::vector<int64_t> all = comm_.allgather_i64(
      {static_cast<int64_t>(op), group, static_cast<int64_t>(flags), call,
       static_cast<int64_t>(startable)});
  const size_t ranks = all.size() / kFields;
  uint64_t least = startable;
  for (size_t r = 0; r < ranks; ++r) {
    const int64_t* first = &all[0];
    const int64_t* theirs = &all[r * kFields];
    if (!std::equal(first, first + kCompared, theirs)) {
      const int64_t at = std::min(first[3], theirs[3]);
      sdk::fail(STRATA_ERR_MISMATCH,
                "gather/release sequence diverges at call " + std::to_string(at) +
                    " of this step: rank 0 " + describe(first) + ", rank " + std::to_string(r) +
                    " " + describe(theirs) +
                    " (every rank must gather and release the same groups in the same order)");
    }
    least = std::min(least, static_cast<uint64_t>(theirs[4]));
  }
  return least;
}

}  // namespace strata::zero
