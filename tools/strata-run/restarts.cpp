#include "restarts.hpp"

#include <algorithm>

namespace strata::run {

void SlotLedger::record(const Placement& placement, const JobOutcome& outcome, bool at_startup) {
  if (outcome.lost_host) {
    dropped_hosts_.insert(*outcome.lost_host);
    return;
  }
  if (!outcome.failed_rank || *outcome.failed_rank < 0 ||
      static_cast<size_t>(*outcome.failed_rank) >= placement.ranks.size()) {
    return;  // no rank to blame (mpirun itself failed, say): the same slots run again
  }
  const RankPlace& place = placement.ranks[static_cast<size_t>(*outcome.failed_rank)];
  const std::string& host = placement.hosts.at(static_cast<size_t>(place.host)).name;
  // A start-up crash condemns its host only where other hosts can carry the job: on the run's only
  // host (one machine) the failed slot alone goes, as for a later failure.
  if (at_startup && placement.hosts.size() > 1) {
    dropped_hosts_.insert(host);
  } else {
    ++lost_slots_[host];
  }
}

std::vector<Host> SlotLedger::apply(const std::vector<Host>& hosts) const {
  std::vector<Host> left;
  for (Host host : hosts) {
    if (dropped_hosts_.count(host.name) > 0) continue;
    const auto lost = lost_slots_.find(host.name);
    if (lost != lost_slots_.end()) host.slots -= lost->second;
    if (host.slots > 0) left.push_back(std::move(host));
  }
  return left;
}

int restart_world_size(int slots, int min_np, int max_np, const std::function<bool(int)>& allowed) {
  const int most = max_np > 0 ? std::min(slots, max_np) : slots;
  for (int n = most; n >= std::max(min_np, 1); --n) {
    if (allowed(n)) return n;
  }
  return 0;
}

}  // namespace strata::run
