// --max-restarts: what a failed job leaves for its next run. Pure, so the unit tests pin it.
//
// A failed rank takes its slot out of every later run (a preempted or broken slot is not tried
// again); a host whose launch agent could not start its ranks, or one of whose ranks failed within
// the start-up window while other hosts ran the job too, is taken out whole. The rest of the hosts, as listed now (-H, or the
// hostfile read again, so an operator may add or remove hosts between runs), carry the restart.
#pragma once

#include "hosts.hpp"
#include "job_outcome.hpp"
#include "placement.hpp"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace strata::run {

class SlotLedger {
 public:
  // Records one run's failure. at_startup: the failure came within the start-up window.
  void record(const Placement& placement, const JobOutcome& outcome, bool at_startup);
  // A host found not answering after a failure: out of every later run.
  void drop_host(const std::string& host) { dropped_hosts_.insert(host); }
  // `hosts` without the hosts taken out and the slots lost; hosts left with no slot are dropped.
  std::vector<Host> apply(const std::vector<Host>& hosts) const;

 private:
  std::set<std::string> dropped_hosts_;
  std::map<std::string, int> lost_slots_;
};

// The largest world size in [min_np, max_np] (max_np 0: no limit) that fits `slots` and that
// `allowed` accepts (the batch rules); 0 when there is none.
int restart_world_size(int slots, int min_np, int max_np, const std::function<bool(int)>& allowed);

}  // namespace strata::run
