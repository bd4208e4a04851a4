// The step-time split (API 1.5) against the host's own clock: a small model trained for --steps
// calls of step(), with --work-ms of host computation (a busy loop, not a sleep) before each. For
// every call after the first it checks, on every rank:
//   - the five parts add up to wall: |sum - wall| <= 5% of wall;
//   - wall is the time since the previous step() returned, as this host measured it:
//     |wall - measured| <= 5% of measured + 50 us (--wall-slack-ms), where a late return is
//     taken out first. The runtime's clock for a step stops just before step() returns, the
//     host's just after: when the host's thread is descheduled in between (a loaded machine, the
//     sanitizers), `measured` for that call is long by the delay and the next call's is short by
//     as much. A call long by more than the bound is therefore accepted as a late return if the
//     next call, with the delay given back, is within it again; at most 3 per run (a split that
//     systematically dropped time would show as late returns every call), and a call that is
//     short without a late return before it fails. One more call than --steps is run so that the
//     last checked call has a next one;
//   - host_seconds > 0 and covers the host's own measured work (>= 95% of it, less 50 us);
//   - comm_wait, optimizer, gather and runtime_other are >= 0;
// accumulating micro-steps (gradient_accumulation_steps > 1) included. Prints the first
// violation and exits 1; on success rank 0 prints "split_host: N calls checked".
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <strata/strata.hpp>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Host computation for about `ms` milliseconds; returns how long it took and a value the
// compiler cannot drop.
double busy_work(double ms, double* sink) {
  const auto start = Clock::now();
  double x = *sink;
  do {
    for (int i = 0; i < 2000; ++i) x = std::sqrt(x * x + 1.0) * 0.999;
  } while (seconds_since(start) * 1e3 < ms);
  *sink = x;
  return seconds_since(start);
}

int fail(int rank, uint64_t call, const std::string& what, const strata::StepResult::Time& t,
         double measured) {
  std::fprintf(stderr,
               "split_host: rank %d call %llu: %s (wall %.6f host %.6f comm_wait %.6f optimizer "
               "%.6f gather %.6f runtime_other %.6f; measured %.6f)\n",
               rank, static_cast<unsigned long long>(call), what.c_str(), t.wall, t.host,
               t.comm_wait, t.optimizer, t.gather, t.runtime_other, measured);
  return 1;
}

int run(const std::string& manifest, const std::string& overrides, uint64_t calls, double work_ms,
        double wall_slack_ms, uint64_t late_return_at, int64_t drop_us) {
  strata::Runtime rt(manifest, overrides);
  const int rank = rt.world().rank;
  const std::vector<std::pair<std::string, uint64_t>> shapes{{"w0", 4000}, {"w1", 37}, {"b", 5}};
  std::vector<std::vector<float>> init;
  std::vector<uint32_t> groups;
  for (const auto& [name, count] : shapes) {
    init.emplace_back(count, 0.01f);
    const uint32_t index = rt.register_param(name, STRATA_F32, init.back().data(), nullptr, count);
    groups.push_back(rt.define_group("layer_" + name, {index}));
  }
  rt.finalize();
  auto last_return = Clock::now();
  double sink = 1.0, worst_wall = 0.0, worst_sum = 0.0;
  uint64_t accumulated = 0, late_returns = 0;
  double late_by = 0.0;  // how late the previous call returned (0: on time), as the split shows
  constexpr uint64_t kMaxLateReturns = 3;
  for (uint64_t call = 1; call <= calls + 1; ++call) {
    const double worked = busy_work(work_ms, &sink);
    for (uint32_t p = 0; p < groups.size(); ++p) {
      strata::GatheredGroup gathered(rt, groups[p], STRATA_GATHER_FOR_BACKWARD);
      strata::ParamView view = rt.view(p);
      auto* data = static_cast<const float*>(view.data);
      auto* grad = static_cast<float*>(view.grad);
      for (uint64_t i = 0; i < view.count; ++i)
        grad[i] += 0.1f * data[i] - 0.001f * static_cast<float>(rank + 1);
    }
    const strata::StepResult r = rt.step();
    // Test hooks: a late return (the thread away between the runtime's clock and the host's), or
    // a split that drops time on every call (as if the host had measured that much more).
    if (call == late_return_at) std::this_thread::sleep_for(std::chrono::milliseconds(3));
    const auto now = Clock::now();
    const double measured = std::chrono::duration<double>(now - last_return).count() +
                            static_cast<double>(drop_us) * 1e-6;
    last_return = now;
    if (r.outcome == STRATA_STEP_ACCUMULATED) ++accumulated;
    const strata::StepResult::Time& t = r.time;
    if (call == 1) continue;
    const double sum = t.host + t.comm_wait + t.optimizer + t.gather + t.runtime_other;
    if (std::fabs(sum - t.wall) > 0.05 * t.wall)
      return fail(rank, call, "the parts do not add up to wall", t, measured);
    // This call's deviation with the previous call's late return given back.
    const double deviation = measured - t.wall + late_by;
    const double bound = 0.05 * measured + wall_slack_ms * 1e-3;
    late_by = 0.0;
    if (deviation > bound) {
      late_by = deviation;  // returned late: the next call must be short by as much
      if (++late_returns > kMaxLateReturns) {
        return fail(rank, call,
                    "wall is short of the time since the previous step() returned in more than " +
                        std::to_string(kMaxLateReturns) + " calls",
                    t, measured);
      }
    } else if (deviation < -bound && call > 2) {  // call 2: call 1 (unchecked) returned late
      return fail(rank, call, "wall is not the time since the previous step() returned", t,
                  measured);
    }
    if (!(t.host > 0.0)) return fail(rank, call, "host_seconds is not > 0", t, measured);
    if (t.host < 0.95 * worked - 50e-6) {
      return fail(
          rank, call,
          "host_seconds is less than the host's own work (" + std::to_string(worked) + " s)", t,
          measured);
    }
    if (t.comm_wait < 0 || t.optimizer < 0 || t.gather < 0 || t.runtime_other < 0) {
      return fail(rank, call, "a negative part", t, measured);
    }
    if (late_by == 0.0 && call > 2) {
      worst_wall = std::max(worst_wall, std::fabs(deviation) / measured);
    }
    worst_sum = std::max(worst_sum, std::fabs(sum - t.wall) / t.wall);
  }
  if (rank == 0) {
    std::printf(
        "split_host: %llu calls checked (%llu accumulating), worst |wall - measured| %.2f%% "
        "(%llu late returns given back), worst |sum - wall| %.4f%% (sink %g)\n",
        static_cast<unsigned long long>(calls), static_cast<unsigned long long>(accumulated),
        worst_wall * 100, static_cast<unsigned long long>(late_returns), worst_sum * 100, sink);
  }
  return 0;
}

}  // namespace

// split_host MANIFEST [OVERRIDES] [--steps N] [--work-ms MS] [--wall-slack-ms MS]
//            [--late-return-at CALL] [--drop-us US]
// The last two check the check: a 3 ms pause after step() returns at CALL (a late return, which
// must be given back), or US microseconds added to every call's measured time (time a split
// would have dropped, which must fail).
int main(int argc, char** argv) {
  std::string manifest, overrides;
  uint64_t calls = 20;
  double work_ms = 2.0;
  double wall_slack_ms = 0.05;
  uint64_t late_return_at = 0;
  int64_t drop_us = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc)
      calls = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--work-ms" && i + 1 < argc)
      work_ms = std::strtod(argv[++i], nullptr);
    else if (a == "--wall-slack-ms" && i + 1 < argc)
      wall_slack_ms = std::strtod(argv[++i], nullptr);
    else if (a == "--late-return-at" && i + 1 < argc)
      late_return_at = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--drop-us" && i + 1 < argc)
      drop_us = std::strtoll(argv[++i], nullptr, 10);
    else if (manifest.empty())
      manifest = a;
    else
      overrides = a;
  }
  if (manifest.empty()) {
    std::fprintf(stderr, "usage: split_host MANIFEST [OVERRIDES] [--steps N] [--work-ms MS] [--wall-slack-ms MS]\n");
    return 2;
  }
  try {
    return run(manifest, overrides, calls, work_ms, wall_slack_ms, late_return_at, drop_us);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
