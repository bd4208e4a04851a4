// Ranks -> hosts: host by host in the order given (the first host gets ranks 0..slots-1), the way
// mpirun's default by-slot mapping does, so both backends place a rank on the same host.
#pragma once

#include "hosts.hpp"

#include <vector>

namespace strata::run {

struct RankPlace {
  int rank = 0;
  int host = 0;        // index into Placement::hosts
  int local_rank = 0;  // index among the ranks on that host
};

struct Placement {
  std::vector<Host> hosts;       // the hosts that got at least one rank, in order
  std::vector<int> local_size;   // ranks on each of those hosts
  std::vector<RankPlace> ranks;  // by rank
};

// np 0 means every slot. Throws UsageError when np exceeds the slots ("-np 5 but the hosts have 4
// slots (host1:2, host2:2)") or is negative.
Placement place_ranks(const std::vector<Host>& hosts, int np);

// "rank 2" or "ranks 2-3": the ranks on one host, for messages (ranks of a host are contiguous).
std::string describe_ranks(const Placement& placement, int host);

}  // namespace strata::run
