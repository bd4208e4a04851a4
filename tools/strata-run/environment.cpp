#include "environment.hpp"

#include "error.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace strata::run {
namespace {

constexpr std::array<std::string_view, 15> kOwnNames = {
    "RANK",        "LOCAL_RANK",  "WORLD_SIZE",        "LOCAL_SIZE",
    "CROSS_RANK",  "CROSS_SIZE",  "MASTER_ADDR",       "MASTER_PORT",
    "STRATA_JOB_SECRET", "STRATA_NETWORK_INTERFACE", "STRATA_MANIFEST",
    "STRATA_RESTART_COUNT", "STRATA_PREVIOUS_WORLD_SIZE", "STRATA_FIRST_WORLD_SIZE",
    "STRATA_CHECKPOINT_DIR"};

bool valid_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  });
}

}  // namespace

std::string master_addr(const Placement& placement, const std::vector<bool>& hosts_local,
                        const std::string& this_host) {
  const bool all_local = std::all_of(hosts_local.begin(), hosts_local.end(), [](bool b) { return b; });
  if (all_local) return "127.0.0.1";
  const std::string& first = placement.hosts.front().name;
  const bool loopback_name = first == "localhost" || first.rfind("127.", 0) == 0 || first == "::1";
  return hosts_local.front() && loopback_name ? this_host : first;
}

EnvVars job_env(const JobEnv& job) {
  EnvVars vars = {{"MASTER_ADDR", job.master_addr},
                  {"MASTER_PORT", std::to_string(job.master_port)},
                  {"STRATA_JOB_SECRET", job.secret}};
  if (job.network_interface) vars.emplace_back("STRATA_NETWORK_INTERFACE", *job.network_interface);
  if (job.manifest) vars.emplace_back("STRATA_MANIFEST", *job.manifest);
  if (job.comm_library) vars.emplace_back("STRATA_COMM_LIBRARY", *job.comm_library);
  if (job.library) vars.emplace_back("STRATA_LIBRARY", *job.library);
  vars.emplace_back("STRATA_RESTART_COUNT", std::to_string(job.restart_count));
  vars.emplace_back("STRATA_PREVIOUS_WORLD_SIZE", std::to_string(job.previous_world_size));
  if (job.first_world_size > 0) vars.emplace_back("STRATA_FIRST_WORLD_SIZE", std::to_string(job.first_world_size));
  if (job.checkpoint_dir) vars.emplace_back("STRATA_CHECKPOINT_DIR", *job.checkpoint_dir);
  vars.insert(vars.end(), job.exports.begin(), job.exports.end());
  return vars;
}

EnvVars place_env(const Placement& placement, int rank) {
  const RankPlace& place = placement.ranks.at(static_cast<size_t>(rank));
  return {
      {"RANK", std::to_string(place.rank)},
      {"LOCAL_RANK", std::to_string(place.local_rank)},
      {"WORLD_SIZE", std::to_string(placement.ranks.size())},
      {"LOCAL_SIZE", std::to_string(placement.local_size.at(static_cast<size_t>(place.host)))},
      {"CROSS_RANK", std::to_string(place.host)},
      {"CROSS_SIZE", std::to_string(placement.hosts.size())},
  };
}

EnvVars rank_env(const Placement& placement, int rank, const JobEnv& job) {
  EnvVars vars = place_env(placement, rank);
  const EnvVars shared = job_env(job);
  vars.insert(vars.end(), shared.begin(), shared.end());
  return vars;
}

EnvVars resolve_exports(const std::vector<std::string>& specs,
                        const char* (*lookup)(const char*)) {
  EnvVars vars;
  for (const std::string& spec : specs) {
    const auto eq = spec.find('=');
    const std::string name = spec.substr(0, eq);
    if (!valid_name(name)) throw UsageError("-x " + spec + ": '" + name + "' is not a variable name");
    if (std::find(kOwnNames.begin(), kOwnNames.end(), name) != kOwnNames.end()) {
      throw UsageError("-x " + spec + ": strata-run sets " + name + " itself");
    }
    if (eq != std::string::npos) {
      vars.emplace_back(name, spec.substr(eq + 1));
      continue;
    }
    const char* value = lookup(name.c_str());
    if (value == nullptr) throw UsageError("-x " + name + ": " + name + " is not set");
    vars.emplace_back(name, value);
  }
  return vars;
}

std::vector<std::string> merge_environment(const char* const* base, const EnvVars& vars) {
  std::vector<std::string> out;
  for (; base != nullptr && *base != nullptr; ++base) {
    const std::string_view entry = *base;
    const std::string_view name = entry.substr(0, entry.find('='));
    const bool overridden =
        std::any_of(vars.begin(), vars.end(), [&](const auto& var) { return var.first == name; });
    if (!overridden) out.emplace_back(entry);
  }
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

}  // namespace strata::run
