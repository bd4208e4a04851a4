// The runtime's memory report (Runtime::memory()) against the ZeRO partition layout, in exact
// bytes, after finalize and again after two optimizer steps (steady state). Run under mpirun with
// --stage and --binding; every rank checks its own report.
//
// Layout (plugins/zero/src/partition_layout.hpp and bucket_plan.hpp): buckets are planned in
// reverse registration order with capacity reduce_bucket_size elements (a larger parameter gets
// its own bucket); at stages 1-3 a bucket holds one group's parameters only, and at stage 3 never
// mixes persistent (count <= param_persistence_threshold, or in no group) with partitioned ones.
// Bucket b of count_b elements gives every rank a slice of S_b = ceil(count_b / N) rounded up to
// 16 elements; rank r owns the real elements of [r·S_b, (r+1)·S_b). With Ψ elements in all,
// ΣS = Σ_b S_b and own_r = the real elements rank r owns, the fp32 Adam bytes per rank are:
//   stage 0: params 4Ψ   grads 4Ψ   master 0      optimizer 8Ψ
//   stage 1: params 4Ψ   grads 4Ψ   master 0      optimizer 8·own_r   (full grads persist)
//   stage 2: params 4Ψ   grads 4ΣS  master 0      optimizer 8·own_r   (+4Ψ host-owned grads)
//   stage 3: params 4·Ψ_persistent   grads 4ΣS  master 4ΣS   optimizer 8·own_r
// (fp32 masters are never a second copy: at stages 0-2 they are the parameters' own ranges, and
// stage 3's parameter partition is the master partition itself, so partitioned parameters count
// once, as MASTER; host-owned gradients count 4Ψ at every stage).
// Stage 3 with --offload-param (ZeRO-Infinity, the offload stratum's parameter store):
//   cpu:  the master partition lives in the store's memory, counted as params: params
//         4·Ψ_persistent + 4ΣS, master 0;
//   nvme: the store is a file, 4ΣS bytes of params on disk; in memory params 4·Ψ_persistent,
//         master 0 and grads only the host-owned ones (the partition exists during a step only).
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <strata/strata.hpp>

#include "runtime_binding.hpp"
#include "test_model.hpp"

namespace strata::dptest {
namespace {

struct Settings {
  std::string manifest, model = "odd", binding = "groups";
  int stage = 0;
  std::string offload_param = "none", nvme_dir = "/tmp";
};
Settings settings;

struct Bytes {
  uint64_t params = 0, grads = 0, master = 0, optimizer = 0;
  uint64_t disk_params = 0;  // offload_param nvme: the store's file
};

uint64_t slice_size(uint64_t count, uint64_t ranks) { return ((count + ranks - 1) / ranks + 15) / 16 * 16; }

// The buckets as plugins/zero plans them: element counts, and whether each is partitioned.
struct PlannedBucket {
  uint64_t count = 0;
  bool partitioned = false;
};

std::vector<PlannedBucket> plan(const std::vector<ParamSpec>& params, const std::vector<uint64_t>& keys,
                                const std::vector<bool>& partitioned, uint64_t capacity) {
  std::vector<PlannedBucket> buckets;
  bool open = false;
  uint64_t open_key = 0;
  for (std::size_t i = params.size(); i-- > 0;) {
    const uint64_t count = params[i].count;
    if (count > capacity) {
      open = false;
      buckets.push_back({count, partitioned[i]});
      continue;
    }
    if (open && (buckets.back().count + count > capacity || open_key != keys[i])) open = false;
    if (!open) buckets.push_back({0, partitioned[i]});
    open = true;
    open_key = keys[i];
    buckets.back().count += count;
  }
  return buckets;
}

Bytes expected_bytes(const TestModel& model, bool groups, int stage, uint64_t ranks, uint64_t rank,
                     uint64_t capacity, uint64_t threshold) {
  const std::vector<ParamSpec> params = model.params();
  std::vector<int64_t> group_of(params.size(), -1);
  if (groups) {
    const std::vector<GroupSpec> specs = model.groups();
    for (std::size_t g = 0; g < specs.size(); ++g)
      for (std::size_t p : specs[g].params) group_of[p] = int64_t(g);
  }
  std::vector<uint64_t> keys(params.size(), 0);
  std::vector<bool> partitioned(params.size(), false);
  uint64_t psi = 0, persistent = 0;
  for (std::size_t p = 0; p < params.size(); ++p) {
    psi += params[p].count;
    const bool whole = group_of[p] < 0 || params[p].count <= threshold;
    partitioned[p] = stage == 3 && !whole;
    if (stage == 3 && whole) persistent += params[p].count;
    if (stage >= 1) keys[p] = uint64_t(2 * (group_of[p] + 1)) + (stage == 3 && whole ? 1 : 0);
  }
  Bytes b;
  const uint64_t host_grads = groups ? 0 : 4 * psi;
  if (stage == 0) {
    return {4 * psi, 4 * psi, 0, 8 * psi};  // plugin-owned or host-owned, 4Ψ either way
  }
  uint64_t slices = 0, owned = 0;
  for (const PlannedBucket& bucket : plan(params, keys, partitioned, capacity)) {
    const uint64_t s = slice_size(bucket.count, ranks);
    slices += s;
    const uint64_t lo = std::min(bucket.count, rank * s), hi = std::min(bucket.count, (rank + 1) * s);
    owned += hi - lo;
  }
  b.params = stage == 3 ? 4 * persistent : 4 * psi;
  b.grads = stage == 1 ? 4 * psi : host_grads + 4 * slices;
  b.master = stage == 3 ? 4 * slices : 0;
  b.optimizer = 8 * owned;
  if (stage == 3 && settings.offload_param == "cpu") {
    b.params += 4 * slices;
    b.master = 0;
  }
  if (stage == 3 && settings.offload_param == "nvme") {
    b.disk_params = 4 * slices;
    b.master = 0;
    b.grads = host_grads;
  }
  return b;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

uint64_t zero_key(const nlohmann::json& zero, const char* name, uint64_t fallback) {
  if (zero.contains(name)) return zero[name].get<uint64_t>();
  const std::string alias = std::string("stage3_") + name;
  return zero.contains(alias) ? zero[alias].get<uint64_t>() : fallback;
}

void expect_report(const MemoryReport& m, const Bytes& want, int rank, const char* when) {
  std::printf("rank %d %s: params %llu (formula %llu)  grads %llu (%llu)  master %llu (%llu)  "
              "optimizer_state %llu (%llu)  comm_buffers %llu\n",
              rank, when, (unsigned long long)m.current[STRATA_MEM_PARAMS], (unsigned long long)want.params,
              (unsigned long long)m.current[STRATA_MEM_GRADS], (unsigned long long)want.grads,
              (unsigned long long)m.current[STRATA_MEM_MASTER], (unsigned long long)want.master,
              (unsigned long long)m.current[STRATA_MEM_OPTIMIZER_STATE], (unsigned long long)want.optimizer,
              (unsigned long long)m.current[STRATA_MEM_COMM_BUFFERS]);
  EXPECT_EQ(m.current[STRATA_MEM_PARAMS], want.params) << when;
  EXPECT_EQ(m.current[STRATA_MEM_GRADS], want.grads) << when;
  EXPECT_EQ(m.current[STRATA_MEM_MASTER], want.master) << when;
  EXPECT_EQ(m.current[STRATA_MEM_OPTIMIZER_STATE], want.optimizer) << when;
  EXPECT_EQ(m.located[STRATA_MEM_DISK][STRATA_MEM_PARAMS], want.disk_params) << when;
}

TEST(MemoryLayout, ReportEqualsFormulaAfterFinalizeAndAfterSteps) {
  const nlohmann::json manifest = read_json(settings.manifest);
  const std::string optimizer = manifest.at("optimizer").at("type").get<std::string>();
  ASSERT_TRUE(optimizer == "Adam" || optimizer == "AdamW") << "the formula is for Adam's 2 moments";
  const nlohmann::json zero = manifest.value("zero_optimization", nlohmann::json::object());
  const uint64_t capacity = zero_key(zero, "reduce_bucket_size", uint64_t{1} << 20);
  const uint64_t threshold = zero_key(zero, "param_persistence_threshold", 100000);

  nlohmann::json overrides = {{"zero_optimization", {{"stage", settings.stage}}},
                              {"train_batch_size", nullptr},
                              {"train_micro_batch_size_per_gpu", 4}};
  if (settings.offload_param != "none") {
    overrides["zero_optimization"]["offload_param"] = {{"device", settings.offload_param},
                                                       {"nvme_path", settings.nvme_dir}};
  }
  Runtime runtime(settings.manifest, overrides.dump());
  const WorldInfo world = runtime.world();
  std::unique_ptr<TestModel> model = make_model(settings.model);
  model->init(1);
  const Binding binding = parse_binding(settings.binding);
  RuntimeBinding bound(runtime, *model, binding);
  const Bytes want = expected_bytes(*model, binding == Binding::groups, settings.stage,
                                    uint64_t(world.size), uint64_t(world.rank), capacity, threshold);
  expect_report(runtime.memory(), want, world.rank, "after finalize");
  {
    // fp32: masters and parameters are one copy of the model state, not two. Stages 0-2: the
    // parameters alone; stage 3: the whole parameters plus the partition.
    const MemoryReport m = runtime.memory();
    uint64_t psi = 0;
    for (const ParamSpec& p : model->params()) psi += p.count;
    const uint64_t once =
        settings.stage == 3 ? want.master + want.params + want.disk_params : 4 * psi;
    EXPECT_EQ(m.current[STRATA_MEM_MASTER] + m.current[STRATA_MEM_PARAMS] +
                  m.located[STRATA_MEM_DISK][STRATA_MEM_PARAMS],
              once)
        << "masters duplicate parameters at stage " << settings.stage;
  }

  // Two steps on constant inputs: lent buffers and transient partitions must all be gone again.
  std::vector<float> x(4 * model->inputs(), 0.5f);
  std::vector<uint8_t> y(4, 1);
  for (int step = 0; step < 2; ++step) {
    model->train_batch(bound.access(), x.data(), y.data(), 4, 1.0f, {});
    ASSERT_TRUE(runtime.step().applied());
  }
  expect_report(runtime.memory(), want, world.rank, "after 2 steps");
}

}  // namespace
}  // namespace strata::dptest

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  CLI::App app{"Memory report vs ZeRO layout formula"};
  auto& s = strata::dptest::settings;
  app.add_option("--manifest", s.manifest)->required();
  app.add_option("--model", s.model)->capture_default_str();
  app.add_option("--binding", s.binding)->capture_default_str();
  app.add_option("--stage", s.stage)->required();
  app.add_option("--offload-param", s.offload_param, "stage 3: none, cpu or nvme")
      ->check(CLI::IsMember({"none", "cpu", "nvme"}));
  app.add_option("--nvme-dir", s.nvme_dir, "offload_param nvme: the store's folder");
  CLI11_PARSE(app, argc, argv);
  return RUN_ALL_TESTS();
}
