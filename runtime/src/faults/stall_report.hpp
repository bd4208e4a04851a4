// The sentences the stall inspector and the failure path print: what one rank was doing, and which
// ranks have not arrived at the collective this rank waits on. Pure functions of the activity
// snapshots, so they are unit-tested without processes.
#pragma once

#include "faults/activity.hpp"

#include <string>
#include <vector>

namespace strata::rt {

// Parameter and group names, to show "strata_grad_ready('fc2.weight')" rather than an index.
struct ActivityNames {
  std::vector<std::string> params;
  std::vector<std::string> groups;
};

// What the watchdog knows of one other rank.
struct PeerState {
  int rank = -1;
  bool heard = false;             // at least one heartbeat arrived
  ActivitySnapshot last;          // the latest heartbeat
  double seconds_since_heard = 0; // its age
  bool left = false;              // said goodbye (strata_destroy)
  std::string lost;               // why its connection ended without a goodbye; "" if it did not
};

// "in host code for 1.2 s after strata_grad_ready('fc2.weight') (steps done: 14, micro-batches:
// 57, collectives: 311, last allreduce)".
std::string describe_activity(const ActivitySnapshot& s, const ActivityNames& names);

// The stall message of rank `rank`, waiting for `waited` seconds: who has not arrived at its
// collective and what each last did. A peer silent for more than `silent_after` seconds is "not
// responding".
std::string stall_report(int rank, const ActivitySnapshot& mine, double waited,
                         const std::vector<PeerState>& peers, double silent_after,
                         const ActivityNames& names);

// "rank 1", "ranks 0, 2-3".
std::string rank_list(const std::vector<int>& ranks);

}  // namespace strata::rt
