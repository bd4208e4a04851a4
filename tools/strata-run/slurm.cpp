#include "slurm.hpp"

#include "error.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>

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
  constexpr int kMostPerEntry = 1 << 20;
  std::vector<int> counts;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find(',', begin), text.size());
    const std::string_view entry(text.data() + begin, end - begin);
    const auto bad = [&] {
      throw UsageError(variable + "='" + text + "': entry '" + std::string(entry) +
                       "' is not a count N or N(xREPEAT) (the Slurm allocation's tasks per node)");
    };
    // N, or N(xREPEAT): digits only, each number from 1 to 2^20.
    const auto number = [&](std::string_view digits) {
      int value = 0;
      const auto [last, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (digits.empty() || digits[0] == '+' || ec != std::errc() || last != digits.data() + digits.size() ||
          value < 1 || value > kMostPerEntry) {
        bad();
      }
      return value;
    };
    const size_t paren = entry.find("(x");
    int repeat = 1;
    if (paren != std::string_view::npos) {
      if (entry.back() != ')') bad();
      repeat = number(entry.substr(paren + 2, entry.size() - paren - 3));
    }
    const int count = number(entry.substr(0, paren));
    if (counts.size() + static_cast<size_t>(repeat) > kMostPerEntry) bad();
    counts.insert(counts.end(), static_cast<size_t>(repeat), count);
    begin = end + 1;
  }
  return counts;
}

namespace {

constexpr size_t kMostNodes = 1 << 20;

[[noreturn]] void bad_hostlist(const std::string& variable, const std::string& list, const std::string& why) {
  throw UsageError(variable + "='" + list + "': " + why + " (a Slurm hostlist such as node[01-04,07],gpu1)");
}

// One entry of a hostlist (no top-level comma): every bracket group expanded, left to right.
void expand_entry(const std::string& entry, const std::string& variable, const std::string& list,
                  std::vector<std::string>& out) {
  const size_t open = entry.find('[');
  if (open == std::string::npos) {
    if (entry.find(']') != std::string::npos) bad_hostlist(variable, list, "a ']' without its '['");
    out.push_back(entry);
    return;
  }
  const size_t close = entry.find(']', open);
  if (close == std::string::npos) bad_hostlist(variable, list, "a '[' without its ']'");
  const std::string prefix = entry.substr(0, open);
  const std::string ranges = entry.substr(open + 1, close - open - 1);
  std::vector<std::string> tails;
  expand_entry(entry.substr(close + 1), variable, list, tails);
  size_t begin = 0;
  while (begin <= ranges.size()) {
    const size_t end = std::min(ranges.find(',', begin), ranges.size());
    const std::string range = ranges.substr(begin, end - begin);
    const size_t dash = range.find('-');
    const std::string low = range.substr(0, dash);
    const std::string high = dash == std::string::npos ? low : range.substr(dash + 1);
    const auto digits = [](const std::string& t) {
      return !t.empty() && t.size() <= 9 && t.find_first_not_of("0123456789") == std::string::npos;
    };
    if (!digits(low) || !digits(high) || std::stol(high) < std::stol(low)) {
      bad_hostlist(variable, list, "'[" + ranges + "]' holds '" + range + "', not N or LOW-HIGH with LOW <= HIGH");
    }
    for (long v = std::stol(low); v <= std::stol(high); ++v) {
      std::string number = std::to_string(v);
      if (number.size() < low.size()) number.insert(0, low.size() - number.size(), '0');  // node[01-10]
      for (const std::string& tail : tails) {
        if (out.size() == kMostNodes) bad_hostlist(variable, list, "more than 2^20 nodes");
        out.push_back(prefix + number + tail);
      }
    }
    begin = end + 1;
  }
}

}  // namespace

std::vector<std::string> expand_slurm_hostlist(const std::string& list, const std::string& variable) {
  std::vector<std::string> nodes;
  std::string entry;
  int depth = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == ',' && depth == 0) {
      if (entry.empty()) bad_hostlist(variable, list, "an empty entry");
      expand_entry(entry, variable, list, nodes);
      entry.clear();
      continue;
    }
    if (i == list.size()) bad_hostlist(variable, list, "a '[' without its ']'");
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    if (depth < 0 || depth > 1) bad_hostlist(variable, list, "brackets that do not pair");
    entry += c;
  }
  return nodes;
}

std::vector<Host> slurm_hosts(const std::vector<std::string>& nodes, const std::vector<int>& slots,
                              const std::string& job_id) {
  if (nodes.size() != slots.size()) {
    throw UsageError("Slurm allocation " + job_id + ": SLURM_JOB_NODELIST names " + std::to_string(nodes.size()) +
                     " nodes but its tasks per node count " + std::to_string(slots.size()));
  }
  long total = 0;
  for (const int n : slots) total += n;
  if (total > (1 << 20)) {
    throw UsageError("Slurm allocation " + job_id + ": " + std::to_string(total) +
                     " tasks in all; strata-run starts at most 2^20 ranks");
  }
  std::vector<Host> hosts;
  for (size_t i = 0; i < nodes.size(); ++i) {
    hosts.push_back(Host{nodes[i], slots[i], "Slurm allocation " + job_id + " node " + std::to_string(i + 1)});
  }
  return hosts;
}

std::vector<Host> slurm_allocation_hosts(const std::string& job_id) {
  // Inside an srun step (srun strata-run ...) Slurm rewrites the task counts to the step's. Its
  // special steps (batch, extern, interactive: ids from 0xfffffff0 up) keep the allocation's.
  const std::optional<std::string> step = env_value("SLURM_STEP_ID");
  unsigned long step_id = 0;
  if (step && std::from_chars(step->data(), step->data() + step->size(), step_id).ec == std::errc() &&
      step_id < 0xfffffff0UL) {
    throw UsageError("strata-run runs inside step " + job_id + "." + *step + " of Slurm allocation " + job_id +
                     ", whose SLURM_TASKS_PER_NODE counts that step's tasks, not the allocation's: start strata-run "
                     "from the batch script or salloc's shell (not under srun), or give the hosts with -H or "
                     "--hostfile");
  }
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
  const std::vector<int> slots = parse_slurm_counts(*counts, counts_variable);
  return slurm_hosts(expand_slurm_hostlist(*nodelist, "SLURM_JOB_NODELIST"), slots, job_id);
}

int slurm_master_port(const std::string& job_id, int run) {
  unsigned long id = 0;
  const auto [end, ec] = std::from_chars(job_id.data(), job_id.data() + job_id.size(), id);
  if (ec != std::errc() || end != job_id.data() + job_id.size()) return 29500;
  // Another stride than the gloo plugin's port for srun-started ranks (job x 61 + step).
  return 20000 + static_cast<int>((id * 67 + 1000 + static_cast<unsigned long>(run)) % 12000);
}

std::string srun_launch_agent() {
  // --kill-on-bad-exit: the step ends with its task. --quiet: srun's own progress lines would read
  // as the rank's output.
  return "srun --nodes=1 --ntasks=1 --overlap --kill-on-bad-exit=1 --quiet --export=ALL --job-name=strata-rank "
         "--nodelist";
}

}  // namespace strata::run
