// Checks a Strata timeline (issue 12) against what the runtime promises about it.
//
//   timeline_check TRACE --ranks N --steps S --stage Z [--min-buckets B] [--api-step-spans]
//                  [--all-skipped] [--require CAT/NAME]...
//     TRACE is the merged Chrome trace rank 0 writes at a clean end. Checks: it parses; every rank
//     has its process_name track and every thread with events its thread_name; for each rank and
//     step s in [0, S) the sharding "bucket_reduce" spans (async b/e pairs) of step s cover bucket
//     indices 0..B-1 once each, B the same for every step and rank and at least --min-buckets;
//     complete events ("X") on each thread nest (two are disjoint or one holds the other, 1 us of
//     rounding allowed); every async "b" has its "e" (same id, cat, name, pid) no earlier. At stage
//     0 also: each rank's step s has one "optimizer" phase, and every bucket_reduce and every
//     strata_grad_ready of step s is over / has begun before it.
//
//     Each --require CAT/NAME: every rank has at least one such event (span, instant or async).
//     Each --absent CAT: no event of category CAT at all (plugins that cannot trace, under an
//     older emulated ABI; use with --min-buckets 0).
//     A step/skipped_step instant (with a message) in any step is a violation, unless --all-skipped
//     (fp16 overflow on every step): then every step of every rank has exactly one and no optimizer
//     phase, and the stage-0 ordering checks are left out.
//     With --api-step-spans (gradient_accumulation_steps 1): each rank's step s also has exactly
//     one api "strata_step" span with args.step == s (the steps done when it began), and it holds
//     that step's "optimizer" phase.
//
//   timeline_check --failure FILE --log LOG
//     FILE is a failed rank's PATH.rank<R>.json (a JSON array). Checks: it parses; it ends in a
//     runtime "failure" instant whose message names the collective ("<name> #N") the stall message
//     of this rank in LOG names; a "comm" event of that collective (args.seq == N) is in the file.
//
//   timeline_check --failure FILE --message TEXT
//     FILE parses as a JSON array whose last event is the runtime "failure" instant, and its
//     message contains TEXT (a rank whose own call failed, or that ended on a peer's failure).
//
// Prints the first violation and exits 1; prints what it saw and exits 0 when all hold.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using nlohmann::json;

namespace {

[[noreturn]] void violation(const std::string& what) {
  std::cout << "VIOLATION: " << what << std::endl;
  std::exit(1);
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) violation(path + ": cannot open");
  try {
    return json::parse(in);
  } catch (const std::exception& e) {
    violation(path + ": not JSON: " + e.what());
  }
}

std::string text(const json& v, const char* key) {
  auto it = v.find(key);
  return it != v.end() && it->is_string() ? it->get<std::string>() : std::string();
}
int64_t integer(const json& v, const char* key, int64_t otherwise = -1) {
  auto it = v.find(key);
  return it != v.end() && it->is_number() ? it->get<int64_t>() : otherwise;
}
int64_t arg(const json& e, const char* key) {
  auto it = e.find("args");
  return it != e.end() && it->is_object() ? integer(*it, key) : -1;
}
double number(const json& v, const char* key) {
  auto it = v.find(key);
  if (it == v.end() || !it->is_number())
    violation("event without a numeric \"" + std::string(key) + "\": " + v.dump());
  return it->get<double>();
}

constexpr double kSlackUs = 1.0;

struct Async {
  double begin = 0, end = 0;
  int64_t step = -1, index = -1;
  json b;
};

// Pairs "b"/"e" events; every b has exactly one e and the other way round.
std::vector<Async> async_pairs(const json& events) {
  std::map<std::tuple<int64_t, std::string, std::string, int64_t>, Async> open;
  std::vector<Async> done;
  for (const json& e : events) {
    const std::string ph = text(e, "ph");
    if (ph != "b" && ph != "e") continue;
    if (!e.contains("id")) violation("async event without an id: " + e.dump());
    const auto key =
        std::make_tuple(integer(e, "pid"), text(e, "cat"), text(e, "name"), integer(e, "id"));
    if (ph == "b") {
      if (open.count(key)) violation("two async begins with the same id/cat/name/pid: " + e.dump());
      Async a;
      a.begin = number(e, "ts");
      a.step = arg(e, "step");
      a.index = arg(e, "index");
      a.b = e;
      open.emplace(key, a);
    } else {
      auto it = open.find(key);
      if (it == open.end()) violation("async end without its begin: " + e.dump());
      it->second.end = number(e, "ts");
      if (it->second.end < it->second.begin)
        violation("async end before its begin: " + it->second.b.dump() + " / " + e.dump());
      done.push_back(it->second);
      open.erase(it);
    }
  }
  if (!open.empty()) violation("async begin without its end: " + open.begin()->second.b.dump());
  return done;
}

void check_nesting(const json& events) {
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> threads;
  std::map<std::pair<int64_t, int64_t>, std::vector<const json*>> which;
  for (const json& e : events) {
    if (text(e, "ph") != "X") continue;
    const double ts = number(e, "ts"), dur = number(e, "dur");
    if (dur < 0) violation("negative duration: " + e.dump());
    threads[{integer(e, "pid"), integer(e, "tid")}].push_back({ts, ts + dur});
    which[{integer(e, "pid"), integer(e, "tid")}].push_back(&e);
  }
  for (auto& [track, track_spans] : threads) {
    auto& spans = track_spans;  // the sort's lambda captures it: C++20 for a structured binding
    std::vector<size_t> order(spans.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    // By start; of two starting together, the longer first (it holds the other).
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      if (spans[a].first != spans[b].first) return spans[a].first < spans[b].first;
      return spans[a].second > spans[b].second;
    });
    std::vector<size_t> stack;
    for (size_t i : order) {
      while (!stack.empty() && spans[stack.back()].second <= spans[i].first + kSlackUs)
        stack.pop_back();
      if (!stack.empty() && spans[i].second > spans[stack.back()].second + kSlackUs) {
        violation("spans on pid " + std::to_string(track.first) + " tid " +
                  std::to_string(track.second) + " overlap without nesting: " +
                  which[track][stack.back()]->dump() + " and " + which[track][i]->dump());
      }
      stack.push_back(i);
    }
  }
}

int check_merged(const std::string& path, int ranks, int64_t steps, int stage, int64_t min_buckets,
                 bool api_step_spans, bool all_skipped, const std::vector<std::string>& required,
                 const std::vector<std::string>& absent) {
  const json doc = read_json(path);
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array()) {
    violation(path + ": expected an object with a traceEvents array");
  }
  if (text(doc, "displayTimeUnit") != "ms") violation("displayTimeUnit is not \"ms\"");
  const json& events = doc["traceEvents"];
  std::map<std::string, int> seen;  // cat/name (ph): how many
  std::set<int64_t> named;
  for (const json& e : events) {
    if (!e.is_object()) violation("an event that is not an object: " + e.dump());
    const std::string ph = text(e, "ph");
    const int64_t pid = integer(e, "pid");
    if (pid < 0 || pid >= ranks)
      violation("event of pid " + std::to_string(pid) + " in a " + std::to_string(ranks) +
                "-rank job: " + e.dump());
    if (ph == "M") {
      if (text(e, "name") == "process_name") {
        if (e["args"].value("name", "") != "rank " + std::to_string(pid))
          violation("process_name is not 'rank <pid>': " + e.dump());
        if (!named.insert(pid).second)
          violation("two process_name events for pid " + std::to_string(pid));
      }
      continue;
    }
    if (ph != "e") ++seen[text(e, "cat") + "/" + text(e, "name") + " (" + ph + ")"];
    if ((ph == "X" || ph == "i" || ph == "b") && arg(e, "step") < 0)
      violation("event without args.step: " + e.dump());
  }
  for (int r = 0; r < ranks; ++r) {
    if (!named.count(r)) violation("rank " + std::to_string(r) + " has no process_name track");
  }
  // Every thread with events has its name.
  std::set<std::pair<int64_t, int64_t>> thread_named;
  for (const json& e : events) {
    if (text(e, "ph") == "M" && text(e, "name") == "thread_name") {
      if (e["args"].value("name", "").empty()) violation("thread_name without a name: " + e.dump());
      thread_named.insert({integer(e, "pid"), integer(e, "tid")});
    }
  }
  for (const json& e : events) {
    if (text(e, "ph") != "M" && !thread_named.count({integer(e, "pid"), integer(e, "tid")})) {
      violation("an event on a thread without a thread_name: " + e.dump());
    }
  }
  std::cout << "events seen (cat/name (ph): count):\n";
  for (const auto& [what, count] : seen) std::cout << "  " << what << ": " << count << "\n";

  for (const std::string& category : absent) {
    for (const json& e : events) {
      if (text(e, "ph") != "M" && text(e, "cat") == category)
        violation("an event of category " + category + ", which should have none: " + e.dump());
    }
  }
  for (const std::string& what : required) {
    for (int r = 0; r < ranks; ++r) {
      bool found = false;
      for (const json& e : events) {
        const std::string ph = text(e, "ph");
        if (integer(e, "pid") == r && (ph == "X" || ph == "i" || ph == "b") &&
            text(e, "cat") + "/" + text(e, "name") == what) {
          found = true;
          break;
        }
      }
      if (!found) violation("rank " + std::to_string(r) + " has no " + what + " event");
    }
  }

  check_nesting(events);
  const std::vector<Async> pairs = async_pairs(events);

  // bucket_reduce per rank and step.
  std::map<int64_t, std::map<int64_t, std::vector<const Async*>>> reduces;  // pid -> step -> spans
  for (const Async& a : pairs) {
    if (text(a.b, "cat") != "sharding" || text(a.b, "name") != "bucket_reduce") continue;
    if (a.step < 0 || a.step >= steps)
      violation("bucket_reduce of step " + std::to_string(a.step) + " outside [0, " +
                std::to_string(steps) + "): " + a.b.dump());
    if (a.index < 0) violation("bucket_reduce without args.index: " + a.b.dump());
    reduces[integer(a.b, "pid")][a.step].push_back(&a);
  }
  int64_t buckets = -1;
  if (min_buckets == 0) {
    // --min-buckets 0: a sharding plugin that does not trace; then none at all.
    if (!reduces.empty()) violation("bucket_reduce spans where none are expected");
    buckets = 0;
  }
  for (int r = 0; r < ranks && min_buckets > 0; ++r) {
    for (int64_t s = 0; s < steps; ++s) {
      std::vector<int64_t> indices;
      for (const Async* a : reduces[r][s]) indices.push_back(a->index);
      std::sort(indices.begin(), indices.end());
      const std::string where = "rank " + std::to_string(r) + " step " + std::to_string(s);
      if (indices.empty()) violation(where + ": no sharding bucket_reduce span");
      for (size_t i = 0; i < indices.size(); ++i) {
        if (indices[i] != static_cast<int64_t>(i)) {
          std::ostringstream list;
          for (int64_t x : indices) list << x << " ";
          violation(where + ": bucket_reduce indices are not 0..B-1 once each: " + list.str());
        }
      }
      if (buckets < 0) buckets = static_cast<int64_t>(indices.size());
      if (static_cast<int64_t>(indices.size()) != buckets) {
        violation(where + ": " + std::to_string(indices.size()) +
                  " buckets reduced, where the first step had " + std::to_string(buckets));
      }
    }
  }
  if (buckets < min_buckets)
    violation(std::to_string(buckets) + " buckets per step; expected at least " +
              std::to_string(min_buckets));
  std::cout << buckets << " bucket_reduce spans per step on every rank\n";

  if (stage == 0) {
    for (int r = 0; r < ranks; ++r) {
      std::map<int64_t, double> optimizer;  // step -> begin
      for (const json& e : events) {
        if (integer(e, "pid") == r && text(e, "ph") == "X" && text(e, "cat") == "step" &&
            text(e, "name") == "optimizer") {
          if (!optimizer.emplace(arg(e, "step"), number(e, "ts")).second)
            violation("two optimizer phases in one step: " + e.dump());
        }
      }
      std::set<int64_t> skipped;  // steps with a skipped_step instant (fp16 overflow)
      for (const json& e : events) {
        if (integer(e, "pid") == r && text(e, "ph") == "i" && text(e, "cat") == "step" &&
            text(e, "name") == "skipped_step") {
          if (e["args"].value("message", "").empty())
            violation("skipped_step without a message: " + e.dump());
          if (!skipped.insert(arg(e, "step")).second)
            violation("two skipped_step instants in one step: " + e.dump());
        }
      }
      for (int64_t s = 0; s < steps; ++s) {
        const std::string where = "rank " + std::to_string(r) + " step " + std::to_string(s);
        auto it = optimizer.find(s);
        if (all_skipped) {
          if (!skipped.count(s)) violation(where + ": no step/skipped_step instant");
          if (it != optimizer.end()) violation(where + ": an optimizer phase in a skipped step");
          continue;
        }
        if (skipped.count(s))
          violation(where + ": a skipped_step instant in a run expected to skip none");
        if (it == optimizer.end()) violation(where + ": no step/optimizer phase");
        for (const Async* a : reduces[r][s]) {
          if (a->end > it->second + kSlackUs)
            violation(where + ": bucket_reduce ends after the optimizer began: " + a->b.dump() +
                      " ends at " + std::to_string(a->end) + ", optimizer at " +
                      std::to_string(it->second));
        }
      }
      int64_t grad_ready = 0;
      for (const json& e : events) {
        if (integer(e, "pid") != r || text(e, "ph") != "X" || text(e, "cat") != "api" ||
            text(e, "name") != "strata_grad_ready")
          continue;
        ++grad_ready;
        const int64_t s = arg(e, "step");
        auto it = optimizer.find(s);
        if (all_skipped) continue;
        if (it == optimizer.end())
          violation("grad_ready of a step without an optimizer phase: " + e.dump());
        if (number(e, "ts") > it->second + kSlackUs)
          violation("grad_ready of step " + std::to_string(s) +
                    " begins after its optimizer: " + e.dump());
      }
      if (grad_ready < steps)
        violation("rank " + std::to_string(r) + ": " + std::to_string(grad_ready) +
                  " strata_grad_ready spans in " + std::to_string(steps) + " steps");
    }
  }
  if (api_step_spans) {
    for (int r = 0; r < ranks; ++r) {
      std::map<int64_t, std::pair<double, double>> step_calls;  // step -> [begin, end]
      std::map<int64_t, std::pair<double, double>> optimizer;
      for (const json& e : events) {
        if (integer(e, "pid") != r || text(e, "ph") != "X") continue;
        const bool call = text(e, "cat") == "api" && text(e, "name") == "strata_step";
        const bool phase = text(e, "cat") == "step" && text(e, "name") == "optimizer";
        if (!call && !phase) continue;
        const double ts = number(e, "ts");
        auto& into = call ? step_calls : optimizer;
        if (!into.emplace(arg(e, "step"), std::make_pair(ts, ts + number(e, "dur"))).second) {
          violation("rank " + std::to_string(r) + ": two " + text(e, "name") +
                    " spans with args.step " + std::to_string(arg(e, "step")) + ": " + e.dump());
        }
      }
      for (int64_t s = 0; s < steps; ++s) {
        const std::string where = "rank " + std::to_string(r) + " step " + std::to_string(s);
        auto c = step_calls.find(s);
        if (c == step_calls.end()) {
          std::ostringstream list;
          for (const auto& [step, span] : step_calls) list << step << " ";
          violation(where + ": no api strata_step span with args.step " + std::to_string(s) +
                    " (the strata_step spans have steps: " + list.str() + ")");
        }
        auto o = optimizer.find(s);
        if (o != optimizer.end() && (o->second.first < c->second.first - kSlackUs ||
                                     o->second.second > c->second.second + kSlackUs)) {
          violation(where +
                    ": the optimizer phase is not inside the strata_step call of the same step");
        }
      }
    }
  }
  std::cout << "OK: " << path << "\n";
  return 0;
}

// "<name> #N" in a stall or failure message: the collective it names.
bool collective_named(const std::string& message, std::string* name, int64_t* seq) {
  static const std::regex re(R"(stall: rank [0-9]+ has waited [^#]* on ([a-z_]+) #([0-9]+))");
  std::smatch m;
  if (!std::regex_search(message, m, re)) return false;
  *name = m[1];
  *seq = std::stoll(m[2]);
  return true;
}

int check_failure(const std::string& path, const std::string& log_path,
                  const std::string& expected) {
  static const std::regex rank_re(R"(\.rank([0-9]+)\.json$)");
  std::smatch m;
  if (!std::regex_search(path, m, rank_re)) violation(path + ": not a PATH.rank<R>.json name");
  const std::string rank = m[1];
  const json doc = read_json(path);
  if (!doc.is_array() || doc.empty())
    violation(path + ": expected a non-empty JSON array of events");
  const json* failure = nullptr;
  for (const json& e : doc) {
    if (text(e, "cat") == "runtime" && text(e, "name") == "failure" && text(e, "ph") == "i")
      failure = &e;
    if (integer(e, "pid") != std::stoll(rank))
      violation("event of another pid in rank " + rank + "'s file: " + e.dump());
  }
  if (failure == nullptr) violation(path + ": no runtime failure instant");
  const std::string message = (*failure)["args"].value("message", "");
  if (!expected.empty()) {
    if (message.find(expected) == std::string::npos) {
      violation(path + ": the failure's message does not contain '" + expected + "': " + message);
    }
    if (failure != &doc.back()) violation(path + ": the failure is not the last event");
    std::cout << "OK: " << path << ": ends in the failure '" << message << "'\n";
    return 0;
  }
  std::string name;
  int64_t seq = 0;
  if (!collective_named(message, &name, &seq))
    violation("the failure's message names no collective: " + message);

  // This rank's stall message in the log.
  std::ifstream log(log_path);
  if (!log) violation(log_path + ": cannot open");
  std::string line, logged;
  while (std::getline(log, line)) {
    if (line.find("stall: rank " + rank + " has waited") != std::string::npos) {
      logged = line;
      break;
    }
  }
  if (logged.empty()) violation(log_path + ": no stall message of rank " + rank);
  std::string log_name;
  int64_t log_seq = 0;
  if (!collective_named(logged, &log_name, &log_seq))
    violation("the log's stall message names no collective: " + logged);
  if (log_name != name || log_seq != seq) {
    violation("the failure names " + name + " #" + std::to_string(seq) +
              ", the log's stall message " + log_name + " #" + std::to_string(log_seq));
  }
  bool found = false;
  for (const json& e : doc) {
    if (text(e, "cat") == "comm" && arg(e, "seq") == seq && text(e, "name") == name) found = true;
  }
  if (!found) {
    std::string near;
    for (const json& e : doc) {
      if (text(e, "cat") == "comm" && arg(e, "seq") >= seq - 3) near += "\n  " + e.dump();
    }
    violation(path + ": no comm event '" + name + "' with args.seq " + std::to_string(seq) +
              " (the collective the stall names); comm events from seq " + std::to_string(seq - 3) +
              " on:" + near);
  }
  std::cout << "OK: " << path << ": failure names " << name << " #" << seq
            << " like the log, and the trace has it\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string trace, failure, log, message;
  int ranks = 0, stage = 0;
  int64_t steps = 0, min_buckets = 1;
  bool api_step_spans = false, all_skipped = false;
  std::vector<std::string> required, absent;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) {
        std::cerr << args[i] << " needs a value\n";
        std::exit(2);
      }
      return args[++i];
    };
    if (args[i] == "--ranks")
      ranks = std::stoi(value());
    else if (args[i] == "--steps")
      steps = std::stoll(value());
    else if (args[i] == "--stage")
      stage = std::stoi(value());
    else if (args[i] == "--min-buckets")
      min_buckets = std::stoll(value());
    else if (args[i] == "--api-step-spans")
      api_step_spans = true;
    else if (args[i] == "--all-skipped")
      all_skipped = true;
    else if (args[i] == "--require")
      required.push_back(value());
    else if (args[i] == "--absent")
      absent.push_back(value());
    else if (args[i] == "--failure")
      failure = value();
    else if (args[i] == "--log")
      log = value();
    else if (args[i] == "--message")
      message = value();
    else
      trace = args[i];
  }
  if (!failure.empty()) return check_failure(failure, log, message);
  if (trace.empty() || ranks < 1 || steps < 1) {
    std::cerr << "usage: timeline_check TRACE --ranks N --steps S --stage Z [--min-buckets B] "
                 "[--api-step-spans] [--all-skipped] [--require CAT/NAME]... [--absent CAT]...\n"
                 "       timeline_check --failure PATH.rank<R>.json --log LOG\n"
                 "       timeline_check --failure PATH.rank<R>.json --message TEXT\n";
    return 2;
  }
  return check_merged(trace, ranks, steps, stage, min_buckets, api_step_spans, all_skipped,
                      required, absent);
}
