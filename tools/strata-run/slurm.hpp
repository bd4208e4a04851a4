// Inside a Slurm allocation (SLURM_JOB_ID set, no -H or --hostfile): the allocation's hosts and
// slots, and srun as the launch agent, so that every rank runs in a job step of the allocation
// (Slurm accounts for it, confines it, and ends it with the job) and no ssh is needed.
#pragma once

#include "hosts.hpp"

#include <optional>
#include <string>
#include <vector>

namespace strata::run {

// SLURM_JOB_ID, when strata-run runs inside an allocation.
std::optional<std::string> slurm_job_id();

// "2(x3),1" (SLURM_TASKS_PER_NODE, SLURM_JOB_CPUS_PER_NODE) -> {2, 2, 2, 1}. Throws UsageError
// naming `variable` and the entry that is not a count.
std::vector<int> parse_slurm_counts(const std::string& text, const std::string& variable);

// A Slurm hostlist, "node[01-03,07],gpu1" -> node01 node02 node03 node07 gpu1 (zero padding kept,
// every bracket group of an entry expanded). Throws UsageError naming `variable`.
std::vector<std::string> expand_slurm_hostlist(const std::string& list, const std::string& variable);

// The allocation's nodes (in SLURM_JOB_NODELIST's order) paired with their task counts: the hosts
// and slots of the job. Throws UsageError when the two lists differ in length.
std::vector<Host> slurm_hosts(const std::vector<std::string>& nodes, const std::vector<int>& slots,
                              const std::string& job_id);

// The allocation's hosts: SLURM_JOB_NODELIST expanded, with SLURM_TASKS_PER_NODE's slots (else
// SLURM_JOB_CPUS_PER_NODE's).
std::vector<Host> slurm_allocation_hosts(const std::string& job_id);

// MASTER_PORT when rank 0 runs on another node of allocation `job_id` (no free port can be found
// from here): from the job id and the run, in 20000-31999 (below Linux's ephemeral ports), so that
// jobs sharing a node and a restart after a run whose port may linger seldom meet. A job id that
// is not a number: 29500.
int slurm_master_port(const std::string& job_id, int run);

// srun starting one task on the host that follows it, in a step that may share the allocation's
// CPUs with the job's other steps (--overlap): `srun ... --nodelist HOST sh -c COMMAND`.
std::string srun_launch_agent();

}  // namespace strata::run
