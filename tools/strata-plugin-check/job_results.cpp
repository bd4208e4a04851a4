#include "job_results.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>

namespace strata::plugin_check {
namespace {

// What one rank's file says about each check.
struct RankEvents {
  bool exists = false;
  bool done = false;
  std::vector<std::string> order;              // names in the order begun or recorded
  std::map<std::string, Verdict> verdicts;     // finished checks
  std::string unfinished;                      // begun, never ended (the last such)
};

RankEvents read_rank(const std::string& path) {
  RankEvents events;
  std::ifstream in(path);
  if (!in) return events;
  events.exists = true;
  std::string line;
  while (std::getline(in, line)) {
    if (line == "done") {
      events.done = true;
      continue;
    }
    const size_t tab1 = line.find('\t');
    if (tab1 == std::string::npos) continue;
    const size_t tab2 = line.find('\t', tab1 + 1);
    const std::string kind = line.substr(0, tab1);
    const std::string name = line.substr(tab1 + 1, tab2 == std::string::npos ? std::string::npos
                                                                              : tab2 - tab1 - 1);
    const std::string detail = tab2 == std::string::npos ? "" : line.substr(tab2 + 1);
    if (std::find(events.order.begin(), events.order.end(), name) == events.order.end()) {
      events.order.push_back(name);
    }
    if (kind == "begin") {
      events.unfinished = name;
      continue;
    }
    if (events.unfinished == name) events.unfinished.clear();
    const Outcome outcome = kind == "pass"         ? Outcome::Pass
                            : kind == "skip"       ? Outcome::Skip
                            : kind == "cannot_run" ? Outcome::CannotRun
                                                   : Outcome::Fail;
    // A watchdog failure after a begin replaces nothing: the first verdict stands.
    events.verdicts.emplace(name, Verdict{outcome, detail});
  }
  return events;
}

std::string how_it_ended(const JobEnd& end) {
  if (end.timed_out) return "the job was stopped after running too long";
  if (end.exit_code > 128) return "the rank ended with signal " + std::to_string(end.exit_code - 128);
  return "the job exited with code " + std::to_string(end.exit_code);
}

// The verdict of one check across ranks.
Verdict merge_check(const std::string& name, const std::vector<RankEvents>& ranks,
                    const JobEnd& end) {
  const bool many = ranks.size() > 1;
  auto who = [&](size_t r) { return many ? "rank " + std::to_string(r) + ": " : std::string(); };
  std::optional<Verdict> first_fail;
  size_t failing = 0;
  std::map<Outcome, size_t> seen;  // outcome -> first rank with it
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankEvents& events = ranks[r];
    auto it = events.verdicts.find(name);
    Verdict v;
    if (it != events.verdicts.end()) {
      v = it->second;
    } else if (events.unfinished == name) {
      v = Verdict::fail("did not finish: " + how_it_ended(end));
    } else {
      v = Verdict::fail("not run: the rank ended before it (" + how_it_ended(end) + ")");
    }
    if (v.outcome == Outcome::Fail) {
      if (!first_fail) first_fail = Verdict::fail(who(r) + v.detail);
      ++failing;
    }
    seen.emplace(v.outcome, r);
  }
  if (first_fail) {
    if (failing > 1) first_fail->detail += " (" + std::to_string(failing) + " ranks failed it)";
    return *first_fail;
  }
  // One rank that cannot run the plugin (its host lacks the device) decides for the job.
  if (auto it = seen.find(Outcome::CannotRun); it != seen.end()) {
    return Verdict::cannot_run(who(it->second) + ranks[it->second].verdicts.at(name).detail);
  }
  if (seen.size() > 1) {
    return Verdict::fail("ranks disagree: rank " + std::to_string(seen[Outcome::Pass]) +
                         " passed, rank " + std::to_string(seen[Outcome::Skip]) + " skipped (" +
                         ranks[seen[Outcome::Skip]].verdicts.at(name).detail + ")");
  }
  return ranks[0].verdicts.at(name);
}

}  // namespace

std::vector<CheckResult> merge_job(const std::string& dir, int ranks, const std::string& prefix,
                                   const JobEnd& end) {
  std::vector<RankEvents> events;
  std::vector<std::string> order;
  for (int r = 0; r < ranks; ++r) {
    events.push_back(read_rank(dir + "/rank-" + std::to_string(r) + ".txt"));
    for (const std::string& name : events.back().order) {
      if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
    }
  }
  std::vector<CheckResult> results;
  for (const std::string& name : order) {
    Verdict v = merge_check(name, events, end);
    results.push_back({prefix + name, v.outcome, std::move(v.detail)});
  }
  // The job as a whole: every rank must have started, finished its checks and exited 0.
  std::string problem;
  for (int r = 0; r < ranks && problem.empty(); ++r) {
    const std::string who = ranks > 1 ? "rank " + std::to_string(r) + " " : "the worker ";
    if (!events[r].exists) problem = who + "never started its checks";
    else if (!events[r].done) problem = who + "did not finish its checks";
  }
  if (problem.empty() && (end.exit_code != 0 || end.timed_out)) {
    problem = "the checks finished but " + how_it_ended(end) + " (a crash or leak at exit?)";
  } else if (!problem.empty()) {
    problem += ": " + how_it_ended(end);
  }
  // Reported only when something is wrong with it, so a clean run lists only real checks.
  if (!problem.empty()) {
    std::string tail = end.output_tail;
    for (char& c : tail) {
      if (c == '\n') c = '|';
    }
    results.push_back({prefix + "job", Outcome::Fail,
                       problem + (tail.empty() ? "" : "; output ends: " + tail)});
  }
  return results;
}

}  // namespace strata::plugin_check
