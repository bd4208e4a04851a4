#include "placement.hpp"

#include "error.hpp"

namespace strata::run {

Placement place_ranks(const std::vector<Host>& hosts, int np) {
  const int slots = total_slots(hosts);
  if (np < 0) throw UsageError("-np " + std::to_string(np) + ": expected at least 1 rank");
  if (np == 0) np = slots;
  if (np > slots) {
    // An allocation's hosts were not named on the command line: say where they came from.
    const std::string& origin = hosts.empty() ? std::string() : hosts.front().origin;
    const bool slurm = origin.rfind("Slurm allocation ", 0) == 0;
    throw UsageError("-np " + std::to_string(np) + " but the hosts have " + std::to_string(slots) +
                     " slots (" + describe_slots(hosts) + ")" +
                     (slurm ? "; they are " + origin.substr(0, origin.find(" node ")) +
                                  "'s nodes and tasks per node: ask salloc or sbatch for more tasks (-n), or give "
                                  "the hosts with -H or --hostfile"
                            : ""));
  }
  Placement placement;
  int rank = 0;
  for (const Host& host : hosts) {
    if (rank == np) break;
    const int index = static_cast<int>(placement.hosts.size());
    int local = 0;
    for (; local < host.slots && rank < np; ++local, ++rank) {
      placement.ranks.push_back(RankPlace{rank, index, local});
    }
    placement.hosts.push_back(host);
    placement.local_size.push_back(local);
  }
  return placement;
}

std::string describe_ranks(const Placement& placement, int host) {
  int first = -1;
  int last = -1;
  for (const RankPlace& place : placement.ranks) {
    if (place.host != host) continue;
    if (first < 0) first = place.rank;
    last = place.rank;
  }
  if (first == last) return "rank " + std::to_string(first);
  return "ranks " + std::to_string(first) + "-" + std::to_string(last);
}

}  // namespace strata::run
