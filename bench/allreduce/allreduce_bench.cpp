// Times the comm plugins' allreduce (f32 SUM, through their C ABI) against raw MPI_Allreduce on
// the same buffers, 1 KiB to 256 MiB (x4 steps). Variants per size:
//   mpi         raw MPI_Allreduce of the whole message;
//   plugin-mpi  strata_allreduce_mpi with --config plus {"shm": false, "hierarchical": false}
//               (its pure-MPI path, flat);
//   plugin-shm  strata_allreduce_mpi with --config plus {"shm_min_bytes": 0} plus --shm-config
//               (every size through the shared-memory path when the ranks share a host);
//   plugin-hier strata_allreduce_mpi with --config plus {"hierarchical": true} (across hosts: two
//               levels, a shared-memory group per host, its default ("auto") where every host
//               holds the same number of ranks, more than one; on one host the shared-memory
//               path);
//   gloo        strata_allreduce_gloo with --gloo-config plus {"hierarchical": false}: flat, what
//               the Gloo backend does by default on one host (shared memory when the ranks share
//               it; across hosts that each hold the same number of ranks, more than one, its
//               default is the two-level form of gloo-hier);
//   gloo-tcp    the same plus {"shm": false}: Gloo's own TCP pairs;
//   gloo-hier   strata_allreduce_gloo with --gloo-config plus {"hierarchical": true}.
// The gloo variants run only when the gloo plugin was built and the job's rendezvous is set:
// MASTER_ADDR, MASTER_PORT and STRATA_JOB_SECRET (the plugin takes its rank and size from Open
// MPI's OMPI_COMM_WORLD_*); gloo-tcp and gloo-hier up to --gloo-max-bytes (64 MiB). The instances'
// stores listen on MASTER_PORT (gloo), MASTER_PORT + 1 (gloo-hier) and MASTER_PORT + 2 (gloo-tcp).
// Prints bus bandwidth busbw = 2(n-1)/n * bytes / time (the NCCL-tests convention: the bytes each
// rank must move in a ring algorithm) and the ratios shm/mpi, plugin-mpi/mpi, plugin-hier/
// plugin-mpi, gloo/mpi, gloo-tcp/mpi and gloo-hier/gloo.
// Each iteration runs the variants back to back, each after a barrier, so drift hits all alike; a
// time is the slowest rank's, a figure the median over iterations.
// Before timing a size, each variant runs once into a poisoned receive buffer and its result is
// checked element by element against the exact sum (the data are small integers, so every
// variant's f32 sum is exact whatever its order): a fast but wrong path aborts the run.
// Memory per rank: one send and one receive buffer of the largest size, shared by the variants.
// --collective reduce_scatter times reduce_scatter instead (raw MPI_Reduce_scatter_block, each
// rank keeping 1/n of the message; a message's element count rounded down to a multiple of n),
// with busbw = (n-1)/n * bytes / time and the headline's keys prefixed "rs_". --collective
// allgather likewise (raw MPI_Allgather, each rank sending 1/n of the message; keys "ag_").
// --in-place times allreduce in place (MPI_IN_PLACE; the plugins' send == recv) on a buffer
// refilled from the input before each call's barrier, outside the timing: what DeepSpeed's
// inference_all_reduce does in peer_allreduce.py, so run.sh's DeepSpeed rounds compare like calls
// (the refill also leaves the message in cache, as torch's copy_ does there).
#include <plugin_harness.hpp>

#include <CLI/CLI.hpp>
#include <mpi.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace {

// Variant indices; the gloo pair exists only when the gloo plugin is built and the job's
// rendezvous is set.
enum : int {
  kMpi = 0, kPluginMpi, kPluginShm, kPluginHier, kGloo, kGlooHier, kGlooTcp, kMaxVariants
};
constexpr const char* kNames[kMaxVariants] = {"mpi",  "plugin-mpi", "plugin-shm", "plugin-hier",
                                              "gloo", "gloo-hier",  "gloo-tcp"};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Enough iterations for a stable median; a 4-rank run on 2 cores must finish in a few minutes.
int iterations_for(size_t bytes) {
  if (bytes >= (size_t{64} << 20)) return 5;
  if (bytes >= (size_t{16} << 20)) return 7;
  if (bytes >= (size_t{1} << 20)) return 15;
  return 61;
}

// The element i of rank r's input: small integers, so sums over a few ranks are exact in f32.
float input_value(size_t i, int rank) { return static_cast<float>(static_cast<int>(i % 61) + rank); }

// Whether the run times reduce_scatter or allgather (--collective) instead of allreduce.
bool g_reduce_scatter = false;
bool g_allgather = false;
// Whether allreduce runs in place on recv (--in-place), refilled from send before each call.
bool g_in_place = false;

struct Variant {
  const strata_comm_ops* ops = nullptr;  // nullptr: raw MPI_Allreduce
  void* self = nullptr;
  size_t max_bytes = ~size_t{0};         // larger messages are not run ("-" in the table)
};

// This rank's share of a `count`-element message: all of it, or 1/size for reduce_scatter; and
// what it sends: 1/size for allgather, all of it otherwise.
size_t received_count(size_t count, int size) {
  return g_reduce_scatter ? count / static_cast<size_t>(size) : count;
}
size_t sent_count(size_t count, int size) {
  return g_allgather ? count / static_cast<size_t>(size) : count;
}

void run_once(const Variant& v, float* send, float* recv, size_t count, int size) {
  const size_t out = received_count(count, size);
  const size_t in = sent_count(count, size);
  if (v.ops == nullptr) {
    if (g_allgather) {
      MPI_Allgather(send, static_cast<int>(in), MPI_FLOAT, recv, static_cast<int>(in), MPI_FLOAT,
                    MPI_COMM_WORLD);
    } else if (g_reduce_scatter) {
      MPI_Reduce_scatter_block(send, recv, static_cast<int>(out), MPI_FLOAT, MPI_SUM,
                               MPI_COMM_WORLD);
    } else {
      MPI_Allreduce(g_in_place ? MPI_IN_PLACE : send, recv, static_cast<int>(count), MPI_FLOAT,
                    MPI_SUM, MPI_COMM_WORLD);
    }
    return;
  }
  strata_buffer send_buf = strata::sdk::host_buffer(g_in_place ? recv : send, in, STRATA_F32);
  strata_buffer recv_buf = strata::sdk::host_buffer(recv, out, STRATA_F32);
  strata_coll_args args = strata::sdk::Comm::args(&send_buf, &recv_buf);
  args.op = STRATA_SUM;
  strata_error err = strata::sdk::make_error();
  const auto call = g_allgather        ? v.ops->allgather
                    : g_reduce_scatter ? v.ops->reduce_scatter
                                       : v.ops->allreduce;
  if (call(v.self, &args, nullptr, &err) != STRATA_OK) {
    std::fprintf(stderr, "plugin collective failed: %s\n", err.message);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

// Runs `v` once into a poisoned `recv` and aborts the job if any element differs from the sum.
void verify(const Variant& v, const char* name, float* send, float* recv, size_t count, int size,
            int rank) {
  const size_t out = received_count(count, size);
  // Element i of recv is element first + i of the whole message.
  const size_t first = g_reduce_scatter ? out * static_cast<size_t>(rank) : 0;
  std::fill(recv, recv + out, std::numeric_limits<float>::quiet_NaN());
  // In place the input replaces the poison: an element the collective misses keeps this rank's
  // input, caught except where that equals the sum (rank 1 of 2 at i % 61 == 0).
  if (g_in_place) std::copy(send, send + count, recv);
  MPI_Barrier(MPI_COMM_WORLD);
  run_once(v, send, recv, count, size);
  const int rank_sum = size * (size - 1) / 2;
  long long bad = -1;
  // allgather: element i is element i % block of its owner's input; otherwise the sum.
  const size_t block = sent_count(count, size);
  const auto expected = [&](size_t i) {
    if (g_allgather) return input_value(i % block, static_cast<int>(i / block));
    return static_cast<float>(size * static_cast<int>((first + i) % 61) + rank_sum);
  };
  for (size_t i = 0; i < out; ++i) {
    const float want = expected(i);
    if (recv[i] != want) {
      bad = static_cast<long long>(i);
      break;
    }
  }
  long long first_bad = bad;
  MPI_Allreduce(&bad, &first_bad, 1, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  if (first_bad >= 0) {
    if (bad >= 0) {
      std::fprintf(stderr, "WRONG RESULT: %s, %zu bytes: element %lld is %g, expected %g\n", name,
                   count * sizeof(float), bad, static_cast<double>(recv[bad]),
                   static_cast<double>(expected(static_cast<size_t>(bad))));
    }
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

// Median over iterations of the slowest rank's time for each variant in `active` (others: NaN).
std::vector<double> measure(const std::vector<Variant>& variants, const std::vector<int>& active,
                            float* send, float* recv, size_t count, int size) {
  const int iterations = iterations_for(count * sizeof(float));
  const int warmup = std::max(1, iterations / 4);
  std::vector<std::vector<double>> times(variants.size());
  for (int i = 0; i < warmup + iterations; ++i) {
    for (int v : active) {
      if (g_in_place) std::copy(send, send + count, recv);
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      run_once(variants[v], send, recv, count, size);
      const double seconds = MPI_Wtime() - start;
      if (i >= warmup) times[v].push_back(seconds);
    }
  }
  std::vector<double> result(variants.size(), std::numeric_limits<double>::quiet_NaN());
  for (int v : active) {
    const int n = static_cast<int>(times[v].size());
    MPI_Allreduce(MPI_IN_PLACE, times[v].data(), n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    result[v] = median(times[v]);
  }
  return result;
}

// `base` with `overrides`' keys set (both JSON objects).
std::string merged(const std::string& base, const nlohmann::json& overrides) {
  nlohmann::json config = base.empty() ? nlohmann::json::object() : nlohmann::json::parse(base);
  config.merge_patch(overrides);
  return config.dump();
}

// The host's log, except that rank 0 also prints the MPI plugin's create() line (it says whether
// the shm path is on, its chunk size and how its waits behave) and the gloo plugin's info lines
// (its transport and, hierarchical, the host groups it found).
int g_rank = 0;
void bench_log(void*, int32_t level, const char* msg) {
  if (level >= STRATA_LOG_WARN) {
    std::fprintf(stderr, "[plugin] %s\n", msg);
  } else if (g_rank == 0 && std::strstr(msg, "shm ") != nullptr) {
    std::printf("# plugin: %s\n", msg);
  }
}
void gloo_log(void*, int32_t level, const char* msg) {
  if (level >= STRATA_LOG_WARN) {
    std::fprintf(stderr, "[gloo plugin] %s\n", msg);
  } else if (g_rank == 0 && level >= STRATA_LOG_INFO) {
    std::printf("# gloo: %s\n", msg);
  }
}

// Creates one instance of `library`'s comm ops with `config`, or aborts the job naming it.
void* create_or_abort(const strata::test::PluginLibrary& library, strata::test::FakeHost& host,
                      const std::string& config) {
  void* self = nullptr;
  strata_error err = strata::sdk::make_error();
  if (library.create<strata_comm_ops>(config.c_str(), host.api(), &self, &err) != STRATA_OK) {
    std::fprintf(stderr, "create (%s) failed: %s\n", config.c_str(), err.message);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return self;
}

// A ratio: two decimals, or two significant digits below 0.1 (gloo/mpi can be 0.004); a key
// whose sizes the run did not cover prints as "nan".
std::string figure(double x) {
  if (std::isinf(x) || std::isnan(x)) return "nan";
  char text[32];
  std::snprintf(text, sizeof text, x >= 0.1 ? "%.2f" : "%.2g", x);
  return text;
}

#ifndef STRATA_ALLREDUCE_GLOO_PLUGIN
#define STRATA_ALLREDUCE_GLOO_PLUGIN ""
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Allreduce bandwidth: strata_allreduce_mpi plugin (MPI and shm paths) and "
               "strata_allreduce_gloo (flat, hierarchical) vs raw MPI_Allreduce"};
  std::string plugin_path = STRATA_ALLREDUCE_MPI_PLUGIN;
  std::string gloo_path = STRATA_ALLREDUCE_GLOO_PLUGIN;
  std::string config = "{}", shm_config = "{}", gloo_config = "{}";
  size_t min_bytes = 1024, max_bytes = size_t{256} << 20, gloo_max_bytes = size_t{64} << 20;
  bool no_gloo = false, shm_only = false, in_place = false;
  std::string collective = "allreduce";
  app.add_option("--plugin", plugin_path, "MPI plugin library to load");
  app.add_option("--config", config,
                 "config object for both MPI plugin instances, e.g. {\"chunk_bytes\": 4194304}");
  app.add_option("--shm-config", shm_config,
                 "merged into the shm instance's config only, e.g. {\"shm_chunk_bytes\": 131072}");
  app.add_option("--gloo-plugin", gloo_path, "gloo plugin library to load (empty: none)");
  app.add_option("--gloo-config", gloo_config,
                 "config object for both gloo instances, e.g. {\"timeout_ms\": 60000}");
  app.add_option("--gloo-max-bytes", gloo_max_bytes, "largest message the gloo variants run");
  app.add_flag("--no-gloo", no_gloo, "leave out the gloo variants");
  app.add_flag("--shm-only", shm_only,
               "time only mpi and plugin-shm (the others print as nan; implies --no-gloo): "
               "run.sh's DeepSpeed rounds");
  app.add_flag("--in-place", in_place,
               "allreduce in place, on a buffer refilled from the input before each call (as "
               "peer_allreduce.py's DeepSpeed calls): run.sh's DeepSpeed rounds");
  app.add_option("--min-bytes", min_bytes, "smallest message size (sizes grow x4 from it)");
  app.add_option("--max-bytes", max_bytes, "largest message size");
  app.add_option("--collective", collective,
                 "what to time: allreduce, reduce_scatter or allgather")
      ->check(CLI::IsMember({"allreduce", "reduce_scatter", "allgather"}));
  CLI11_PARSE(app, argc, argv);
  g_reduce_scatter = collective == "reduce_scatter";
  g_allgather = collective == "allgather";
  if (in_place && collective != "allreduce") {
    std::fprintf(stderr, "--in-place: only for --collective allreduce, not %s\n",
                 collective.c_str());
    return 1;
  }
  g_in_place = in_place;

  std::string mpi_config, shm_full_config, mpi_hier_config, gloo_flat_config, gloo_hier_config,
      gloo_tcp_config;
  try {
    mpi_config = merged(config, {{"shm", false}, {"hierarchical", false}});
    shm_full_config =
        merged(merged(config, {{"shm_min_bytes", 0}}), nlohmann::json::parse(shm_config));
    mpi_hier_config = merged(config, {{"hierarchical", true}});
    gloo_flat_config = merged(gloo_config, {{"hierarchical", false}});
    gloo_hier_config = merged(gloo_config, {{"hierarchical", true}});
    gloo_tcp_config = merged(gloo_flat_config, {{"shm", false}});
  } catch (const nlohmann::json::exception& e) {
    std::fprintf(stderr, "--config / --shm-config / --gloo-config: %s\n", e.what());
    return 1;
  }
  // The gloo pair needs the library and the rendezvous; the environment is the same on every
  // rank, so every rank decides alike.
  std::string gloo_skipped;
  const char* master_port = std::getenv("MASTER_PORT");
  if (no_gloo || shm_only) {
    gloo_skipped = shm_only ? "--shm-only" : "--no-gloo";
  } else if (gloo_path.empty()) {
    gloo_skipped = "the gloo plugin was not built";
  } else if (std::getenv("MASTER_ADDR") == nullptr || master_port == nullptr ||
             std::getenv("STRATA_JOB_SECRET") == nullptr) {
    gloo_skipped = "MASTER_ADDR, MASTER_PORT and STRATA_JOB_SECRET are not all set";
  }
  const bool with_gloo = gloo_skipped.empty();

  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g_rank = rank;

  strata::test::PluginLibrary library(plugin_path);
  strata::test::FakeHost host;
  host.api()->log = bench_log;
  const auto& ops = library.ops<strata_comm_ops>();
  std::vector<Variant> variants(with_gloo ? kMaxVariants : kGloo);
  variants[kPluginMpi] = {&ops, create_or_abort(library, host, mpi_config)};
  variants[kPluginShm] = {&ops, create_or_abort(library, host, shm_full_config)};
  variants[kPluginHier] = {&ops, create_or_abort(library, host, mpi_hier_config)};

  std::unique_ptr<strata::test::PluginLibrary> gloo_library;
  strata::test::FakeHost gloo_host;
  gloo_host.api()->log = gloo_log;
  if (with_gloo) {
    gloo_library = std::make_unique<strata::test::PluginLibrary>(gloo_path);
    const auto& gloo_ops = gloo_library->ops<strata_comm_ops>();
    variants[kGloo] = {&gloo_ops, create_or_abort(*gloo_library, gloo_host, gloo_flat_config)};
    // Each instance runs its own store on rank 0: the others listen one and two ports up.
    const std::string flat_port = master_port;
    const std::string hier_port = std::to_string(std::stoi(flat_port) + 1);
    const std::string tcp_port = std::to_string(std::stoi(flat_port) + 2);
    setenv("MASTER_PORT", hier_port.c_str(), 1);
    variants[kGlooHier] = {&gloo_ops, create_or_abort(*gloo_library, gloo_host, gloo_hier_config),
                           gloo_max_bytes};
    setenv("MASTER_PORT", tcp_port.c_str(), 1);
    variants[kGlooTcp] = {&gloo_ops, create_or_abort(*gloo_library, gloo_host, gloo_tcp_config),
                          gloo_max_bytes};
    setenv("MASTER_PORT", flat_port.c_str(), 1);
  }

  const size_t max_count = max_bytes / sizeof(float);
  std::vector<float> send(max_count), recv(max_count, 0.0f);
  for (size_t i = 0; i < max_count; ++i) send[i] = input_value(i, rank);
  const double ring_factor = g_reduce_scatter || g_allgather ? 1.0 : 2.0;
  const double bus_factor = size > 1 ? ring_factor * (size - 1) / size : 1.0;
  const double inf = std::numeric_limits<double>::infinity();
  double plugin_min_from_1mib = inf, shm_min_from_16mib = inf, shm_min = inf;
  double gloo_min = inf, gloo_tcp_min = inf, hier_min_from_64kib = inf, mpi_hier_min = inf;
  if (rank == 0) {
    std::printf("%s f32 SUM, %d ranks; plugin-mpi config %s; plugin-shm config %s; "
                "plugin-hier config %s\n",
                collective.c_str(), size, mpi_config.c_str(), shm_full_config.c_str(),
                mpi_hier_config.c_str());
    if (with_gloo) {
      std::printf("gloo config %s; gloo-hier config %s; gloo-tcp config %s; the last two up to "
                  "%zu bytes\n",
                  gloo_flat_config.c_str(), gloo_hier_config.c_str(), gloo_tcp_config.c_str(),
                  gloo_max_bytes);
      std::printf("%12s %12s %12s %12s %12s %12s %12s %12s %8s %8s %8s %8s %8s %8s"
                  "   (busbw GB/s)\n",
                  "bytes", "mpi", "plugin-mpi", "plugin-shm", "plugin-hier", "gloo", "gloo-hier",
                  "gloo-tcp", "shm/mpi", "pmpi/mpi", "phier/pm", "gloo/mpi", "tcp/mpi",
                  "hier/flat");
    } else {
      std::printf("# gloo: not run (%s)\n", gloo_skipped.c_str());
      std::printf("%12s %12s %12s %12s %12s %8s %8s %8s   (busbw GB/s)\n", "bytes", "mpi",
                  "plugin-mpi", "plugin-shm", "plugin-hier", "shm/mpi", "pmpi/mpi", "phier/pm");
    }
    std::fflush(stdout);
  }
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    // reduce_scatter: a whole number of elements per rank.
    const size_t multiple = g_reduce_scatter || g_allgather ? static_cast<size_t>(size) : 1;
    const size_t count = bytes / sizeof(float) / multiple * multiple;
    std::vector<int> active;
    for (int v = 0; v < static_cast<int>(variants.size()); ++v) {
      if (shm_only && v != kMpi && v != kPluginShm) continue;
      if (bytes <= variants[v].max_bytes) active.push_back(v);
    }
    for (int v : active) {
      verify(variants[v], kNames[v], send.data(), recv.data(), count, size, rank);
    }
    const std::vector<double> t = measure(variants, active, send.data(), recv.data(), count, size);
    std::vector<double> bw(variants.size());
    const double moved = static_cast<double>(count * sizeof(float));
    for (size_t v = 0; v < variants.size(); ++v) bw[v] = bus_factor * moved / t[v] / 1e9;
    const double shm_ratio = bw[kPluginShm] / bw[kMpi];
    const double plugin_ratio = bw[kPluginMpi] / bw[kMpi];
    const double mpi_hier_ratio = bw[kPluginHier] / bw[kPluginMpi];
    if (bytes >= (size_t{64} << 10)) mpi_hier_min = std::min(mpi_hier_min, mpi_hier_ratio);
    shm_min = std::min(shm_min, shm_ratio);
    if (bytes >= (size_t{16} << 20)) shm_min_from_16mib = std::min(shm_min_from_16mib, shm_ratio);
    if (bytes >= (size_t{1} << 20)) plugin_min_from_1mib = std::min(plugin_min_from_1mib, plugin_ratio);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    double gloo_ratio = nan, tcp_ratio = nan, hier_ratio = nan;
    if (with_gloo) {
      gloo_ratio = bw[kGloo] / bw[kMpi];
      gloo_min = std::min(gloo_min, gloo_ratio);
    }
    if (with_gloo && bytes <= gloo_max_bytes) {
      tcp_ratio = bw[kGlooTcp] / bw[kMpi];
      hier_ratio = bw[kGlooHier] / bw[kGloo];
      gloo_tcp_min = std::min(gloo_tcp_min, tcp_ratio);
      if (bytes >= (size_t{64} << 10)) {
        hier_min_from_64kib = std::min(hier_min_from_64kib, hier_ratio);
      }
    }
    if (rank == 0) {
      std::printf("%12zu %12.3f %12.3f %12.3f %12.3f", bytes, bw[kMpi], bw[kPluginMpi],
                  bw[kPluginShm], bw[kPluginHier]);
      if (with_gloo && bytes <= gloo_max_bytes) {
        std::printf(" %12.3f %12.3f %12.3f", bw[kGloo], bw[kGlooHier], bw[kGlooTcp]);
      } else if (with_gloo) {
        std::printf(" %12.3f %12s %12s", bw[kGloo], "-", "-");
      }
      std::printf(" %8.2f %8.2f %8.2f", shm_ratio, plugin_ratio, mpi_hier_ratio);
      if (with_gloo) {
        std::printf(" %8s %8s %8s", figure(gloo_ratio).c_str(), figure(tcp_ratio).c_str(),
                    figure(hier_ratio).c_str());
      }
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  if (rank == 0) {
    const char* p = g_reduce_scatter ? "rs_" : g_allgather ? "ag_" : "";
    std::printf("headline ranks=%d %sshm_vs_mpi_16mib_up=%s %sshm_vs_mpi_min=%s "
                "%splugin_vs_mpi_min=%s %sgloo_vs_mpi_min=%s %sgloo_tcp_vs_mpi_min=%s "
                "%shier_vs_flat_64kib_up=%s %smpi_hier_vs_flat_64kib_up=%s\n",
                size, p, figure(shm_min_from_16mib).c_str(), p, figure(shm_min).c_str(), p,
                figure(plugin_min_from_1mib).c_str(), p, figure(gloo_min).c_str(), p,
                figure(gloo_tcp_min).c_str(), p, figure(hier_min_from_64kib).c_str(), p,
                figure(mpi_hier_min).c_str());
  }
  for (size_t v = 1; v < variants.size(); ++v) variants[v].ops->destroy(variants[v].self);
  MPI_Finalize();
  return 0;
}
