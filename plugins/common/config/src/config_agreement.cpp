#include <strata_common/config_agreement.hpp>

#include <strata/plugin.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

namespace strata::common::config {

void require_same_on_every_rank(
    const std::string& context, const std::string& summary, int size,
    const std::function<void(const void* mine, void* all, size_t bytes)>& allgather) {
  // A key past the record's end would be compared by no rank: the record grows instead.
  if (summary.size() >= kSummaryBytes) {
    sdk::fail(STRATA_ERR_INTERNAL, context + ": the config summary (" +
                                       std::to_string(summary.size()) + " bytes) does not fit " +
                                       std::to_string(kSummaryBytes - 1) + " bytes");
  }
  if (size <= 1) return;
  std::vector<char> mine(kSummaryBytes, '\0');
  std::copy_n(summary.data(), summary.size(), mine.data());
  std::vector<char> all(kSummaryBytes * static_cast<size_t>(size), '\0');
  allgather(mine.data(), all.data(), kSummaryBytes);
  const auto record = [&](int r) {
    const char* at = all.data() + kSummaryBytes * static_cast<size_t>(r);
    return std::string(at, strnlen(at, kSummaryBytes - 1));
  };
  const std::string first = record(0);
  for (int r = 1; r < size; ++r) {
    const std::string other = record(r);
    if (other == first) continue;
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              context + ": ranks were given different configs: rank 0 has {" + first +
                  "}, rank " + std::to_string(r) + " has {" + other +
                  "}; give every rank the same comm.config");
  }
}

}  // namespace strata::common::config
