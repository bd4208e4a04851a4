// The fault tests' training host: a small fp32 (or, with --bf16, bf16) model (three parameters in three groups, so it runs
// at every ZeRO stage) trained for --steps steps, each taking at least --step-ms of "host compute".
// Faults it can bring on itself:
//   --exit-rank R --exit-step K     rank R exits (status 3) at step K without a word to the runtime,
//                                    as a host that crashed or hit its own error would
//   --throw-rank R --throw-step K   rank R's host throws at step K: its Runtime is destroyed while
//                                    the exception unwinds (the usual way a C++ host fails)
//   --stop-rank R --stop-step K     rank R stops itself (SIGSTOP) at step K, in host code
//   --nonfinite-rank R --nonfinite-from K   rank R writes NaN into a gradient from step K on
//   --linger-rank R --linger-ms M   rank R spends M ms in host code after training, before its
//                                    runtime is destroyed (a rank saving the model while the others
//                                    tear down: not a stall)
//   --pid-dir DIR                   each rank writes DIR/rank<R>.pid (for tests that signal one)
// On a runtime error it prints "error: <message>" and exits 1.
#include <strata/half.hpp>
#include <strata/strata.hpp>

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <csignal>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  std::string manifest;
  std::string overrides;
  uint64_t steps = 100;
  int step_ms = 0;
  int exit_rank = -1;
  uint64_t exit_step = 0;
  int linger_rank = -1;
  int linger_ms = 0;
  int throw_rank = -1;
  uint64_t throw_step = 0;
  int stop_rank = -1;
  uint64_t stop_step = 0;
  int nonfinite_rank = -1;
  uint64_t nonfinite_from = 0;
  std::string pid_dir;
  bool bf16 = false;
};

// Host buffers in the model dtype: f32, or bf16 bit patterns.
struct Values {
  bool bf16;
  void* data;
  float get(uint64_t i) const {
    return bf16 ? strata::bf16_to_float(static_cast<const uint16_t*>(data)[i])
                : static_cast<const float*>(data)[i];
  }
  void set(uint64_t i, float v) const {
    if (bf16) {
      static_cast<uint16_t*>(data)[i] = strata::float_to_bf16(v);
    } else {
      static_cast<float*>(data)[i] = v;
    }
  }
};

int run(const Options& o) {
  std::string overrides = o.overrides;
  if (o.bf16) {
    // The model dtype comes from the manifest: add bf16 to whatever patch was given.
    overrides = overrides.empty() ? R"({"bf16": {"enabled": true}})"
                                  : overrides.substr(0, overrides.rfind('}')) +
                                        R"(, "bf16": {"enabled": true}})";
  }
  strata::Runtime rt(o.manifest, overrides);
  const int rank = rt.world().rank;
  if (!o.pid_dir.empty()) {
    std::ofstream(o.pid_dir + "/rank" + std::to_string(rank) + ".pid") << getpid() << "\n";
  }
  const std::vector<std::pair<std::string, uint64_t>> shapes{{"w0", 1000}, {"w1", 37}, {"b", 5}};
  std::vector<std::vector<float>> init;  // f32 storage, or twice as many bf16 values as needed
  std::vector<uint32_t> groups;
  for (const auto& [name, count] : shapes) {
    init.emplace_back(count);
    const Values values{o.bf16, init.back().data()};
    for (uint64_t i = 0; i < count; ++i) values.set(i, 0.01f * static_cast<float>(i % 13));
    const uint32_t index = rt.register_param(name, o.bf16 ? STRATA_BF16 : STRATA_F32,
                                             init.back().data(), nullptr, count);
    groups.push_back(rt.define_group("layer_" + name, {index}));
  }
  rt.finalize();
  for (uint64_t step = 1; step <= o.steps; ++step) {
    if (rank == o.exit_rank && step == o.exit_step) {
      std::fprintf(stderr, "fault_host: rank %d exits at step %llu\n", rank,
                   static_cast<unsigned long long>(step));
      std::fflush(stderr);
      _exit(3);
    }
    if (rank == o.stop_rank && step == o.stop_step) raise(SIGSTOP);
    if (rank == o.throw_rank && step == o.throw_step) {
      throw std::runtime_error("simulated host error on rank " + std::to_string(rank) + " at step " +
                               std::to_string(step));
    }
    if (o.step_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(o.step_ms));
    for (uint32_t p = 0; p < groups.size(); ++p) {
      strata::GatheredGroup gathered(rt, groups[p], STRATA_GATHER_FOR_BACKWARD);
      strata::ParamView view = rt.view(p);
      const Values data{o.bf16, view.data};
      const Values grad{o.bf16, view.grad};
      for (uint64_t i = 0; i < view.count; ++i) {
        grad.set(i, grad.get(i) + 0.1f * data.get(i) - 0.001f * static_cast<float>(rank + 1));
      }
      if (rank == o.nonfinite_rank && step >= o.nonfinite_from && p == 1) {
        grad.set(3, std::numeric_limits<float>::quiet_NaN());
      }
    }
    rt.step();
  }
  if (rank == o.linger_rank) std::this_thread::sleep_for(std::chrono::milliseconds(o.linger_ms));
  if (rank == 0) {
    std::printf("fault_host: %llu steps done\n", static_cast<unsigned long long>(o.steps));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Strata fault-test host"};
  app.add_option("manifest", o.manifest, "manifest file")->required();
  app.add_option("--overrides", o.overrides, "JSON merge patch applied over the manifest");
  app.add_option("--steps", o.steps, "optimizer steps")->capture_default_str();
  app.add_option("--step-ms", o.step_ms, "host compute per step, milliseconds");
  app.add_option("--exit-rank", o.exit_rank, "rank that exits (status 3) at --exit-step");
  app.add_option("--exit-step", o.exit_step, "the step it exits at (1-based)");
  app.add_option("--linger-rank", o.linger_rank, "rank that lingers in host code after training");
  app.add_option("--linger-ms", o.linger_ms, "how long, milliseconds");
  app.add_option("--throw-rank", o.throw_rank, "rank whose host throws at --throw-step");
  app.add_option("--throw-step", o.throw_step, "the step it throws at (1-based)");
  app.add_option("--stop-rank", o.stop_rank, "rank that stops itself (SIGSTOP) at --stop-step");
  app.add_option("--stop-step", o.stop_step, "the step it stops at (1-based)");
  app.add_option("--nonfinite-rank", o.nonfinite_rank, "rank that writes NaN into w1's gradient");
  app.add_option("--nonfinite-from", o.nonfinite_from, "from this step on (1-based)");
  app.add_option("--pid-dir", o.pid_dir, "write <dir>/rank<R>.pid");
  app.add_flag("--bf16", o.bf16, "bf16 model (adds bf16.enabled to the overrides)");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
