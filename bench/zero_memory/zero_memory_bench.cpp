// ZeRO memory benchmark: one (precision, stage) configuration per launch, under mpirun (run.sh
// loops over world sizes 1, 2, 4 and stages 0-3). A ~25 M-parameter MLP, grouped per layer with
// gradients owned by the runtime, takes two Adam steps; then rank 0 prints, for every rank, the
// runtime's bytes by category beside the ZeRO formula for model states (params + grads + master
// + optimizer state; communication buffers apart) and the process's resident memory.
//
// Formulas (Ψ parameters, N ranks; Rajbhandari et al. 2020, Fig. 1 with K = 12):
//   mixed precision (fp16 params and grads, fp32 master and Adam moments): 16Ψ, 4Ψ + 12Ψ/N,
//     2Ψ + 14Ψ/N, 16Ψ/N for stages 0..3;
//   fp32 training as Strata implements it (params and grads fp32, the stage-0 master aliases the
//     params): 16Ψ, 8Ψ + 12Ψ/N, 4Ψ + 16Ψ/N, 20Ψ/N.
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "view_mlp.hpp"

namespace {

using strata::bench::InitialValues;
using strata::bench::ViewMlp;

struct Options {
  int stage = 0;
  std::string precision = "fp32";
  std::vector<std::size_t> sizes = {1024, 4096, 4096, 1024};
  std::size_t micro_batch = 4;
  int steps = 2;
  bool keep_initial_values = false;
  bool print_header = false;
};

constexpr double kMiB = 1024.0 * 1024.0;

// Model-state bytes per rank the formula predicts, and its text.
double formula(const std::string& precision, int stage, double psi, double n, std::string* text) {
  const bool fp16 = precision == "fp16";
  static const char* fp32_text[] = {"16P", "8P+12P/N", "4P+16P/N", "20P/N"};
  static const char* fp16_text[] = {"16P", "4P+12P/N", "2P+14P/N", "16P/N"};
  *text = fp16 ? fp16_text[stage] : fp32_text[stage];
  switch (stage) {
    case 0: return 16 * psi;
    case 1: return (fp16 ? 4 : 8) * psi + 12 * psi / n;
    case 2: return (fp16 ? 2 : 4) * psi + (fp16 ? 14 : 16) * psi / n;
    default: return (fp16 ? 16 : 20) * psi / n;
  }
}

std::string manifest(const Options& o) {
  nlohmann::json m = {{"train_micro_batch_size_per_gpu", o.micro_batch},
                      {"gradient_accumulation_steps", 1},
                      {"optimizer", {{"type", "Adam"}, {"params", {{"lr", 1e-4}}}}},
                      {"zero_optimization", {{"stage", o.stage}}}};
  if (o.precision == "fp16") m["fp16"] = {{"enabled", true}, {"initial_scale_power", 8}};
  return m.dump();
}

uint64_t resident_kib() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * uint64_t(sysconf(_SC_PAGESIZE)) / 1024;
}

uint64_t peak_resident_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return uint64_t(usage.ru_maxrss);  // KiB on Linux
}

void print_header() {
  std::printf("%-4s %2s %5s %4s | %8s %8s %8s %8s | %9s %9s %-8s %9s | %8s %9s | %8s %8s\n",
              "prec", "N", "stage", "rank", "params", "grads", "master", "optim", "states",
              "formula", "", "deviation", "comm", "peak_st", "rss_peak", "rss_now");
}

int run(const Options& o) {
  InitialValues initial_values;  // outlives the runtime, which may read it until destroyed
  strata::Runtime runtime = strata::Runtime::from_json(manifest(o));
  const strata::WorldInfo world = runtime.world();
  ViewMlp model(runtime, initial_values, o.sizes, 7);
  if (!o.keep_initial_values) model.drop_unused_initial_values();
  for (int step = 0; step < o.steps; ++step) {
    model.train_batch(o.micro_batch, static_cast<float>(runtime.loss_scale()));
    runtime.step();
  }

  const strata::MemoryReport m = runtime.memory();
  enum { kParams, kGrads, kMaster, kOptim, kComm, kPeakStates, kRssPeak, kRssNow, kFields };
  int64_t mine[kFields] = {
      int64_t(m.current[STRATA_MEM_PARAMS]), int64_t(m.current[STRATA_MEM_GRADS]),
      int64_t(m.current[STRATA_MEM_MASTER]), int64_t(m.current[STRATA_MEM_OPTIMIZER_STATE]),
      int64_t(m.current[STRATA_MEM_COMM_BUFFERS]),
      int64_t(m.peak[STRATA_MEM_PARAMS] + m.peak[STRATA_MEM_GRADS] + m.peak[STRATA_MEM_MASTER] +
              m.peak[STRATA_MEM_OPTIMIZER_STATE]),
      int64_t(peak_resident_kib()), int64_t(resident_kib())};
  std::vector<int64_t> all(std::size_t(kFields * world.size));
  runtime.allgather(mine, all.data(), kFields);
  if (world.rank != 0) return 0;

  const double psi = double(model.parameters());
  std::string text;
  const double want = formula(o.precision, o.stage, psi, world.size, &text);
  double worst = 0;
  for (int r = 0; r < world.size; ++r) {
    const int64_t* v = all.data() + r * kFields;
    const double states = double(v[kParams] + v[kGrads] + v[kMaster] + v[kOptim]);
    const double deviation = (states - want) / want;
    worst = std::max(worst, std::abs(deviation));
    std::printf("%-4s %2d %5d %4d | %8.1f %8.1f %8.1f %8.1f | %9.1f %9.1f %-8s %+9.5f | %8.1f %9.1f | "
                "%8.1f %8.1f\n",
                o.precision.c_str(), world.size, o.stage, r, v[kParams] / kMiB, v[kGrads] / kMiB,
                v[kMaster] / kMiB, v[kOptim] / kMiB, states / kMiB, want / kMiB, text.c_str(),
                deviation, v[kComm] / kMiB, v[kPeakStates] / kMiB, v[kRssPeak] / 1024.0,
                v[kRssNow] / 1024.0);
  }
  std::printf("deviation precision=%s N=%d stage=%d psi=%.0f max_abs=%.6f\n", o.precision.c_str(),
              world.size, o.stage, psi, worst);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"ZeRO memory by category vs the paper's formula (one configuration per launch)"};
  app.add_option("--stage", o.stage, "zero_optimization.stage")->check(CLI::Range(0, 3));
  app.add_option("--precision", o.precision, "fp32 or fp16")
      ->check(CLI::IsMember({"fp32", "fp16"}))
      ->capture_default_str();
  app.add_option("--sizes", o.sizes, "Layer widths, inputs first")->delimiter(',');
  app.add_option("--micro-batch", o.micro_batch)->capture_default_str();
  app.add_option("--steps", o.steps)->capture_default_str();
  app.add_flag("--keep-initial-values", o.keep_initial_values,
               "Do not hand back the pages of initial values the runtime no longer reads");
  app.add_flag("--print-header", o.print_header, "Print the table header and exit");
  CLI11_PARSE(app, argc, argv);
  if (o.print_header) {
    print_header();
    return 0;
  }
  try {
    return run(o);
  } catch (const std::exception& e) {
    // The runtime fails alike on every rank; one line is enough.
    const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
    if (rank == nullptr || std::string(rank) == "0") {
      std::printf("unavailable precision=%s stage=%d: %s\n", o.precision.c_str(), o.stage, e.what());
    }
    return o.precision == "fp16" ? 0 : 1;
  }
}
