#include "slurm.hpp"

#include "error.hpp"
#include "remote.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace strata::run {
namespace {

std::optional<std::string> env_value(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

}  // namespace

std::optional<std::string> slurm_job_id() { return env_value("SLURM_JOB_ID"); }

std::vector<int> parse_slurm_counts(const std::string& text, const std::string& variable) {
  std::vector<int> counts;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string entry = text.substr(begin, end - begin);
    int count = 0, repeat = 1;
    char tail = '\0';
    const int fields = std::sscanf(entry.c_str(), "%d(x%d)%c", &count, &repeat, &tail);
    const bool plain = fields == 1 && entry.find_first_not_of("0123456789") == std::string::npos;
    const bool repeated = fields == 2 && entry.back() == ')';
    if (!(plain || repeated) || count < 1 || repeat < 1 || repeat > (1 << 20)) {
      throw UsageError(variable + "='" + text + "': entry '" + entry +
                       "' is not a count N or N(xREPEAT) (the Slurm allocation's tasks per node)");
    }
    counts.insert(counts.end(), static_cast<size_t>(repeat), count);
    begin = end + 1;
  }
  return counts;
}

std::vector<Host> slurm_hosts(const std::vector<std::string>& nodes, const std::vector<int>& slots,
                              const std::string& job_id) {
  if (nodes.size() != slots.size()) {
    throw UsageError("Slurm allocation " + job_id + ": SLURM_JOB_NODELIST names " + std::to_string(nodes.size()) +
                     " nodes but its tasks per node count " + std::to_string(slots.size()));
  }
  std::vector<Host> hosts;
  for (size_t i = 0; i < nodes.size(); ++i) {
    hosts.push_back(Host{nodes[i], slots[i], "Slurm allocation " + job_id + " node " + std::to_string(i + 1)});
  }
  return hosts;
}

std::vector<Host> slurm_allocation_hosts(const std::string& job_id) {
  const std::optional<std::string> nodelist = env_value("SLURM_JOB_NODELIST");
  if (!nodelist) {
    throw UsageError("Slurm allocation " + job_id +
                     ": SLURM_JOB_NODELIST is not set; give the hosts with -H or --hostfile");
  }
  std::string counts_variable = "SLURM_TASKS_PER_NODE";
  std::optional<std::string> counts = env_value("SLURM_TASKS_PER_NODE");
  if (!counts) {
    counts_variable = "SLURM_JOB_CPUS_PER_NODE";
    counts = env_value("SLURM_JOB_CPUS_PER_NODE");
  }
  if (!counts) {
    throw UsageError("Slurm allocation " + job_id +
                     ": neither SLURM_TASKS_PER_NODE nor SLURM_JOB_CPUS_PER_NODE is set; give the hosts "
                     "with -H or --hostfile");
  }
  const std::string command = "scontrol show hostnames " + shell_quote(*nodelist) + " 2>&1";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) throw UsageError("Slurm allocation " + job_id + ": cannot run scontrol");
  std::vector<std::string> nodes;
  std::string output;
  char line[1024];
  while (std::fgets(line, sizeof line, pipe.get()) != nullptr) {
    std::string node(line);
    output += node;
    while (!node.empty() && (node.back() == '\n' || node.back() == '\r')) node.pop_back();
    if (!node.empty()) nodes.push_back(node);
  }
  const int status = pclose(pipe.release());
  if (status != 0 || nodes.empty()) {
    throw UsageError("Slurm allocation " + job_id + ": `" + command.substr(0, command.size() - 5) +
                     "` failed (" + (output.empty() ? "no output" : output.substr(0, output.find('\n'))) +
                     "); give the hosts with -H or --hostfile");
  }
  return slurm_hosts(nodes, parse_slurm_counts(*counts, counts_variable), job_id);
}

std::string srun_launch_agent() {
  // --kill-on-bad-exit: the step ends with its task. --quiet: srun's own progress lines would read
  // as the rank's output.
  return "srun --nodes=1 --ntasks=1 --overlap --kill-on-bad-exit=1 --quiet --job-name=strata-rank --nodelist";
}

}  // namespace strata::run
