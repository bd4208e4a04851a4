// strata-run's job loop: one run, and with --max-restarts N up to N more after failures, each on
// the hosts and slots left (restarts.hpp) at the largest world size in [--min-np, --max-np] that
// the manifest's batch rules allow (elastic/batch_rules.hpp: its elasticity block, else the first
// run's global batch kept by another gradient accumulation). The ranks resume from the checkpoint
// folder themselves (STRATA_CHECKPOINT_DIR); strata-run only chooses where and how many.
#include "error.hpp"
#include "host_probe.hpp"
#include "launch.hpp"
#include "network.hpp"
#include "remote.hpp"
#include "restarts.hpp"
#include "signals.hpp"

#include "elastic/batch_rules.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include <signal.h>

namespace strata::run {
namespace {

using Clock = std::chrono::steady_clock;

// The batch rules of the manifest the ranks will read (--manifest, else STRATA_MANIFEST from
// strata-run's environment); none when neither names one (the host's embedded default or its
// overrides are not visible here: then every size is tried, and the runtime refuses one that
// breaks its rules at start-up).
struct ManifestBatchPlan {
  std::string path;
  elastic::BatchPlan plan;
};

std::optional<ManifestBatchPlan> batch_plan_of(const Options& options) {
  std::string path = options.manifest;
  if (path.empty()) {
    const char* env = std::getenv("STRATA_MANIFEST");
    if (env == nullptr || *env == '\0') return std::nullopt;
    path = env;
  }
  std::ifstream in(path);
  if (!in) throw UsageError("--max-restarts: cannot read the manifest " + path + " for its batch rules");
  std::stringstream text;
  text << in.rdbuf();
  try {
    const nlohmann::json manifest = nlohmann::json::parse(text.str(), nullptr, true, true);
    if (!manifest.is_object()) throw UsageError(path + ": expected a JSON object at the top level");
    return ManifestBatchPlan{path, elastic::read_batch_plan(manifest, path)};
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(path + ": malformed JSON (" + std::string(e.what()) + ")");
  } catch (const elastic::BatchError& e) {
    throw UsageError(e.what());
  }
}

// The failure's message without the "strata-run: " it was printed with.
std::string cause_of(const JobOutcome& outcome) {
  const std::string prefix = "strata-run: ";
  return outcome.cause.rfind(prefix, 0) == 0 ? outcome.cause.substr(prefix.size()) : outcome.cause;
}

// A signal that reached strata-run between two runs (the poll loops read it only while a run
// lasts): SIGINT, SIGTERM or SIGHUP means stop, never start another run.
bool stop_signal_pending() {
  for (const CaughtSignal sig : take_signals()) {
    if (sig.number != SIGCHLD) return true;
  }
  return false;
}

// Variables strata-run sets for its runs: a value inherited from strata-run's own environment (a
// job started from inside another job's rank) must not reach the ranks where this job sets none.
void forget_inherited_run_variables() {
  for (const char* name : {"STRATA_RESTART_COUNT", "STRATA_PREVIOUS_WORLD_SIZE", "STRATA_FIRST_WORLD_SIZE",
                           "STRATA_CHECKPOINT_DIR"}) {
    unsetenv(name);
  }
}

// The remote hosts of `hosts` that no longer answer their launch agent, each with why. A host that
// dropped off the network makes every rank report its peers gone, so the rank that failed first
// says nothing about which host was lost; asking the agent does.
// Not asked: with the mpi backend and no --launch-agent, mpirun may start its daemons another way
// (a scheduler's launcher), where an ssh probe would find every host "silent".
std::vector<std::pair<std::string, std::string>> silent_hosts(const Options& options,
                                                              const std::vector<Host>& hosts) {
  if (options.backend == "mpi" && options.launch_agent.empty()) return {};
  const std::string agent = launch_agent_of(options);
  std::vector<std::pair<std::string, std::string>> silent;
  for (const Host& host : hosts) {
    if (is_local_host(host.name)) continue;
    // A margin over the agent's own connect timeout (ssh's ConnectTimeout is connect_timeout).
    if (auto why = host_unreachable(agent, host.name, options.connect_timeout + 5)) silent.emplace_back(host.name, *why);
  }
  return silent;
}

void say(const std::string& line) {
  std::fprintf(stderr, "strata-run: %s\n", line.c_str());
  std::fflush(stderr);
}

}  // namespace

int launch(const Options& options) {
  const bool elastic = options.max_restarts > 0;
  const std::optional<ManifestBatchPlan> plan = elastic ? batch_plan_of(options) : std::nullopt;
  forget_inherited_run_variables();
  std::vector<Host> hosts = hosts_of(options, options.np);
  int np = options.np;
  if (elastic && np == 0 && options.max_np > 0) np = std::min(total_slots(hosts), options.max_np);
  int max_np = options.max_np;  // a restart never grows past the first run's size unless asked
  SlotLedger ledger;
  RunNumber run;
  for (;;) {
    const Placement placement = place_ranks(hosts, np);
    const int world = static_cast<int>(placement.ranks.size());
    if (elastic && run.restart_count == 0) {
      if (world < options.min_np || (options.max_np > 0 && world > options.max_np)) {
        throw UsageError("-np " + std::to_string(world) + " is outside --min-np " + std::to_string(options.min_np) +
                         (options.max_np > 0 ? " .. --max-np " + std::to_string(options.max_np) : ""));
      }
      run.first_world_size = world;
      if (max_np == 0) max_np = world;
    }
    const Clock::time_point started = Clock::now();
    const JobOutcome outcome = run_once(options, placement, run);
    if (outcome.exit_code == 0 || !elastic || outcome.stopped_by_signal || stop_signal_pending()) {
      return outcome.exit_code;
    }
    if (run.restart_count == options.max_restarts) {
      say("no restart left (--max-restarts " + std::to_string(options.max_restarts) +
          " used); the job ends with the last failure's exit code " + std::to_string(outcome.exit_code) +
          ": " + cause_of(outcome));
      return outcome.exit_code;
    }
    const bool at_startup = outcome.failed_at.value_or(Clock::now()) - started <
                            std::chrono::seconds(options.startup_seconds);
    std::vector<Host> listed;
    try {
      listed = hosts_of(options, options.np);  // the hostfile as it reads now
    } catch (const UsageError& e) {
      say(std::string("cannot restart: ") + e.what());
      return outcome.exit_code;
    }
    // A host that stopped answering takes the blame (and is dropped); else the failed rank's slot.
    const auto silent = silent_hosts(options, ledger.apply(listed));
    bool ran_on_silent_host = false;
    for (const auto& [host, why] : silent) {
      say("host " + host + " does not answer: " + why);
      ledger.drop_host(host);
      for (const Host& used : placement.hosts) ran_on_silent_host |= used.name == host;
    }
    if (stop_signal_pending()) return outcome.exit_code;  // told to stop while asking
    if (!ran_on_silent_host) ledger.record(placement, outcome, at_startup);
    const std::vector<Host> left = ledger.apply(listed);
    std::string refusal;
    const auto allowed = [&](int n) {
      if (!plan) return true;
      try {
        elastic::batch_at(plan->plan, static_cast<uint64_t>(run.first_world_size), static_cast<uint64_t>(n),
                          plan->path);
        return true;
      } catch (const elastic::BatchError& e) {
        if (refusal.empty()) refusal = e.what();
        return false;
      }
    };
    const int slots = total_slots(left);
    const int next = restart_world_size(slots, options.min_np, max_np, allowed);
    const std::string hosts_left = left.empty() ? "no host" : describe_slots(left);
    if (next == 0) {
      say("cannot restart after: " + cause_of(outcome) + "; " +
          (slots < options.min_np ? "--min-np " + std::to_string(options.min_np) + " but " +
                                        std::to_string(slots) + " slots are left (" + hosts_left + ")"
                                  : "no world size from --min-np " + std::to_string(options.min_np) + " to " +
                                        std::to_string(std::min(slots, max_np)) + " (" + hosts_left +
                                        " left) keeps the batch rules: " + refusal));
      return outcome.exit_code;
    }
    ++run.restart_count;
    say("restart " + std::to_string(run.restart_count) + " of " + std::to_string(options.max_restarts) + " at " +
        std::to_string(next) + " ranks (was " + std::to_string(world) + ") after: " + cause_of(outcome) +
        (at_startup ? " (within the start-up window)" : "") + "; hosts left: " + hosts_left);
    run.previous_world_size = world;
    hosts = std::move(left);
    np = next;
  }
}

}  // namespace strata::run
