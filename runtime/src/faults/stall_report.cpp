#include "faults/stall_report.hpp"

#include <cstdio>

namespace strata::rt {
namespace {

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", s);
  return text;
}

std::string call_with_arg(ApiCall call, int64_t arg, const ActivityNames& names) {
  std::string text = api_call_name(call);
  const std::vector<std::string>* table = nullptr;
  if (call == ApiCall::GradReady) table = &names.params;
  if (call == ApiCall::Gather || call == ApiCall::Release) table = &names.groups;
  if (table == nullptr || arg < 0) return text;
  const auto index = static_cast<size_t>(arg);
  return text + "(" + (index < table->size() ? "'" + (*table)[index] + "'" : "#" + std::to_string(arg)) + ")";
}

std::string progress(const ActivitySnapshot& s) {
  std::string text = "steps done: " + std::to_string(s.step) +
                     ", micro-batches: " + std::to_string(s.micro_step) +
                     ", collectives: " + std::to_string(s.collectives);
  if (!s.collective.empty()) text += ", last " + s.collective;
  return text;
}

bool arrived(const PeerState& p, const ActivitySnapshot& mine, double silent_after) {
  return p.heard && p.lost.empty() && !p.left && p.seconds_since_heard <= silent_after &&
         p.last.waiting && p.last.collectives >= mine.collectives;
}

}  // namespace

std::string rank_list(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (i > 0) text += ", ";
    text += std::to_string(ranks[i]);
    if (j > i) text += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

std::string describe_activity(const ActivitySnapshot& s, const ActivityNames& names) {
  if (s.waiting) {
    return "waiting for " + seconds(s.seconds) + " in " +
           call_with_arg(s.call, s.call_arg, names) + " on " +
           (s.collective.empty() ? "a collective" : s.collective) + " #" +
           std::to_string(s.collectives) + " (" + progress(s) + ")";
  }
  if (s.call != ApiCall::None) {
    return "in " + call_with_arg(s.call, s.call_arg, names) + " for " + seconds(s.seconds) + " (" +
           progress(s) + ")";
  }
  std::string text = "in host code for " + seconds(s.seconds);
  if (s.last_call != ApiCall::None) text += " after " + call_with_arg(s.last_call, s.call_arg, names);
  return text + " (" + progress(s) + ")";
}

std::string stall_report(int rank, const ActivitySnapshot& mine, double waited,
                         const std::vector<PeerState>& peers, double silent_after,
                         const ActivityNames& names) {
  std::string text = "stall: rank " + std::to_string(rank) + " has waited " + seconds(waited) +
                     " on " + (mine.collective.empty() ? "a collective" : mine.collective) + " #" +
                     std::to_string(mine.collectives) + " in " +
                     call_with_arg(mine.call, mine.call_arg, names) + " (" + progress(mine) + ").";
  std::vector<int> here;
  std::string missing;
  for (const PeerState& p : peers) {
    if (arrived(p, mine, silent_after)) {
      here.push_back(p.rank);
      continue;
    }
    missing += (missing.empty() ? " Not arrived: rank " : "; rank ") + std::to_string(p.rank) + ": ";
    if (!p.lost.empty()) {
      missing += "gone (" + p.lost + ")";
    } else if (p.left) {
      missing += "has left (strata_destroy)";
    } else if (!p.heard) {
      missing += "never reported";
    } else if (p.seconds_since_heard > silent_after) {
      missing += "not responding for " + seconds(p.seconds_since_heard) +
                 " (stopped, swapped out or hung?); its last report: " +
                 describe_activity(p.last, names);
    } else {
      missing += describe_activity(p.last, names);
    }
  }
  if (missing.empty()) {
    text += " Every rank reports waiting on the same or a later collective: the ranks may have "
            "called different collectives.";
  } else {
    text += missing + ".";
  }
  if (!here.empty()) text += " Arrived and waiting: " + rank_list(here) + ".";
  return text;
}

}  // namespace strata::rt
