// strata_offload's checkpoint surface (ABI 1.6): slot names and the configured lr/momentum in the
// caps; read_state/write_state by range on every store (ranges that cross nvme pieces
// included); a run resumed from the state it read, at another shard layout, matching an
// uninterrupted run bit for bit; and the step's lr/momentum against configuring them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "optim_harness.hpp"

namespace strata::test {
namespace {

namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Where the state lives: an offload_optimizer block ($DIR: a scratch directory) and its
// sub_group_size (small ones cut the nvme file into many pieces).
struct Store {
  std::string name;
  std::string offload;
  uint64_t sub_group_size;
};

const Store kNone{"none", R"({"device": "none"})", 1000000000};
const Store kCpu{"cpu", R"({"device": "cpu", "pin_memory": true})", 1000000000};
const Store kNvmeSmall{"nvme61", R"({"device": "nvme", "nvme_path": "$DIR", "buffer_count": 3})",
                       61};
const Store kNvmeOnePiece{"nvme1piece", R"({"device": "nvme", "nvme_path": "$DIR"})", 1000000000};

std::string config_of(const std::string& optimizer, const Store& store, const std::string& dir) {
  std::string offload = store.offload;
  const auto at = offload.find("$DIR");
  if (at != std::string::npos) offload.replace(at, 4, dir);
  return R"({"optimizer": )" + optimizer + R"(, "offload_optimizer": )" + offload +
         R"(, "sub_group_size": )" + std::to_string(store.sub_group_size) + "}";
}

// The model: parameter sizes. A layout cuts each parameter into two shards at cut[p].
const std::vector<uint64_t> kParams = {104, 1, 1063, 4117, 64};

// A deterministic gradient per (parameter, element, step), whatever the layout.
float gradient(size_t p, uint64_t e, uint64_t t) {
  return static_cast<float>(std::sin(0.37 * static_cast<double>(e) + 1.3 * static_cast<double>(t) +
                                     7.1 * static_cast<double>(p)));
}
float initial(size_t p, uint64_t e) {
  return static_cast<float>(std::cos(0.11 * static_cast<double>(e) + static_cast<double>(p)));
}

// One offload instance over the model cut as `cuts` says, with whole-parameter accessors.
class OptRun {
 public:
  OptRun(const std::string& config, const std::vector<uint64_t>& cuts)
      : opt_(offload_ops(), host_, config), cuts_(cuts), shards_(sizes(cuts)) {
    EXPECT_EQ(opt_.status(), STRATA_OK) << opt_.message();
    for (size_t p = 0; p < kParams.size(); ++p) {
      std::vector<float> values(kParams[p]);
      for (uint64_t e = 0; e < kParams[p]; ++e) values[e] = initial(p, e);
      set_param(p, values);
    }
    EXPECT_EQ(opt_.ops().init_state(opt_.self(), shards_.data(), shards_.size(), &err_),
              STRATA_OK)
        << err_.message;
  }

  // `args_size`: the args struct's struct_size (offsetof(strata_step_args, lr): a 1.5 runtime's).
  strata_status step(uint64_t t, double lr = kNaN, double momentum = kNaN, double beta2 = kNaN,
                     size_t args_size = sizeof(strata_step_args)) {
    for (size_t p = 0; p < kParams.size(); ++p) {
      for (int half = 0; half < 2; ++half) {
        std::vector<float>& g = shards_.grad(2 * p + half);
        const uint64_t base = half == 0 ? 0 : cuts_[p];
        for (uint64_t i = 0; i < g.size(); ++i) g[i] = gradient(p, base + i, t);
      }
    }
    const strata_step_args args{args_size, t, 0.5, 1.0, lr, momentum, beta2};
    return opt_.ops().step(opt_.self(), shards_.data(), shards_.size(), &args, &err_);
  }

  std::vector<float> param(size_t p) {
    std::vector<float> all = shards_.master(2 * p);
    const std::vector<float>& rest = shards_.master(2 * p + 1);
    all.insert(all.end(), rest.begin(), rest.end());
    return all;
  }
  void set_param(size_t p, const std::vector<float>& values) {
    std::copy(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(cuts_[p]),
              shards_.master(2 * p).begin());
    std::copy(values.begin() + static_cast<std::ptrdiff_t>(cuts_[p]), values.end(),
              shards_.master(2 * p + 1).begin());
  }

  // Slot `slot` of parameter p, read in `chunk`-element ranges shard by shard.
  std::vector<float> slot(size_t p, uint32_t slot, uint64_t chunk = 37) {
    std::vector<float> all(kParams[p]);
    for (int half = 0; half < 2; ++half) {
      const uint64_t base = half == 0 ? 0 : cuts_[p];
      const uint64_t n = half == 0 ? cuts_[p] : kParams[p] - cuts_[p];
      for (uint64_t first = 0; first < n; first += chunk) {
        EXPECT_EQ(io(false, 2 * p + half, slot, first, std::min(chunk, n - first),
                     all.data() + base + first),
                  STRATA_OK)
            << err_.message;
      }
    }
    return all;
  }
  void set_slot(size_t p, uint32_t slot, std::vector<float> values, uint64_t chunk = 50) {
    for (int half = 0; half < 2; ++half) {
      const uint64_t base = half == 0 ? 0 : cuts_[p];
      const uint64_t n = half == 0 ? cuts_[p] : kParams[p] - cuts_[p];
      for (uint64_t first = 0; first < n; first += chunk) {
        EXPECT_EQ(io(true, 2 * p + half, slot, first, std::min(chunk, n - first),
                     values.data() + base + first),
                  STRATA_OK)
            << err_.message;
      }
    }
  }

  strata_status io(bool write, size_t shard, uint32_t slot, uint64_t first, uint64_t count,
                   float* data) {
    const strata_state_io_args args{sizeof(strata_state_io_args), static_cast<uint32_t>(shard),
                                    slot, first, count, data};
    return write ? opt_.ops().write_state(opt_.self(), &args, &err_)
                 : opt_.ops().read_state(opt_.self(), &args, &err_);
  }

  strata_state_slots slots() {
    strata_state_slots s{};
    s.struct_size = sizeof(s);
    EXPECT_EQ(opt_.ops().state_slots(opt_.self(), &s, &err_), STRATA_OK) << err_.message;
    return s;
  }
  strata_offload_caps caps() {
    strata_offload_caps c{};
    c.struct_size = sizeof(c);
    EXPECT_EQ(opt_.ops().query(opt_.self(), &c, &err_), STRATA_OK) << err_.message;
    return c;
  }
  std::string message() const { return err_.message; }

 private:
  static std::vector<uint64_t> sizes(const std::vector<uint64_t>& cuts) {
    std::vector<uint64_t> s;
    for (size_t p = 0; p < kParams.size(); ++p) {
      s.push_back(cuts[p]);
      s.push_back(kParams[p] - cuts[p]);
    }
    return s;
  }

  FakeHost host_;
  Instance<strata_offload_ops> opt_;
  std::vector<uint64_t> cuts_;
  ShardSet shards_;
  strata_error err_ = sdk::make_error();
};

// Two layouts of kParams: halves, and everything in the first shard but one element.
const std::vector<uint64_t> kCutsA = {52, 1, 500, 2000, 32};
const std::vector<uint64_t> kCutsB = {103, 0, 1062, 4116, 0};

struct OptCase {
  std::string name;
  std::string optimizer;
  std::vector<std::string> slots;
};

const std::vector<OptCase> kOptimizers = {
    {"Adam", R"({"type": "Adam", "params": {"lr": 0.01, "weight_decay": 0.1}})",
     {"exp_avg", "exp_avg_sq"}},
    {"AdamW", R"({"type": "AdamW", "params": {"lr": 0.01, "weight_decay": 0.01}})",
     {"exp_avg", "exp_avg_sq"}},
    {"SgdMomentum",
     R"({"type": "SGD", "params": {"lr": 0.05, "momentum": 0.9, "dampening": 0.1}})",
     {"momentum_buffer"}},
    {"SgdNesterov", R"({"type": "SGD", "params": {"lr": 0.05, "momentum": 0.8, "nesterov": true}})",
     {"momentum_buffer"}},
    {"SgdPlain", R"({"type": "SGD", "params": {"lr": 0.05}})", {}},
    {"Lion", R"({"type": "Lion", "params": {"lr": 0.001, "weight_decay": 0.5}})", {"exp_avg"}},
};

TEST(OffloadCheckpoint, SlotNamesAndConfiguredValues) {
  ScratchDir dir;
  for (const OptCase& c : kOptimizers) {
    SCOPED_TRACE(c.name);
    OptRun run(config_of(c.optimizer, kNone, dir.path()), kCutsA);
    const strata_state_slots slots = run.slots();
    ASSERT_EQ(slots.count, c.slots.size());
    for (size_t i = 0; i < c.slots.size(); ++i) EXPECT_EQ(slots.names[i], c.slots[i]);
    const strata_offload_caps caps = run.caps();
    EXPECT_TRUE(std::isfinite(caps.lr) && caps.lr > 0) << caps.lr;
    if (c.name == "SgdPlain") {
      EXPECT_TRUE(std::isnan(caps.momentum)) << caps.momentum;
    }
  }
  OptRun adam(config_of(R"({"type": "Adam", "params": {"lr": 0.003, "betas": [0.85, 0.99]}})", kNone,
                     dir.path()),
           kCutsA);
  EXPECT_EQ(adam.caps().lr, 0.003);
  EXPECT_EQ(adam.caps().momentum, 0.85);
  OptRun sgd(config_of(R"({"type": "SGD", "params": {"lr": 0.2, "momentum": 0.7}})", kNone,
                    dir.path()),
          kCutsA);
  EXPECT_EQ(sgd.caps().lr, 0.2);
  EXPECT_EQ(sgd.caps().momentum, 0.7);
}

class OffloadStateIo : public ::testing::TestWithParam<Store> {};

// Written in 50-element ranges, read in 37-element ones (and whole): the same values, on every
// store; with nvme pieces of 61 elements most ranges cross a piece. A step afterwards still works
// and the other slot is untouched.
TEST_P(OffloadStateIo, WriteThenReadRoundTrips) {
  ScratchDir dir;
  OptRun run(config_of(kOptimizers[0].optimizer, GetParam(), dir.path()), kCutsA);
  ASSERT_EQ(run.step(1), STRATA_OK) << run.message();
  const std::vector<float> before_sq = run.slot(2, 1);
  for (size_t p = 0; p < kParams.size(); ++p) {
    std::vector<float> values(kParams[p]);
    for (uint64_t e = 0; e < kParams[p]; ++e) values[e] = static_cast<float>(p * 100000 + e) + 0.25f;
    run.set_slot(p, 0, values);
    EXPECT_EQ(run.slot(p, 0), values) << "param " << p;
    EXPECT_EQ(run.slot(p, 0, 1 << 20), values) << "param " << p << ", whole shards";
    EXPECT_EQ(run.slot(p, 0, 1), values) << "param " << p << ", one element at a time";
  }
  EXPECT_EQ(run.slot(2, 1), before_sq) << "exp_avg_sq changed by writes to exp_avg";
  // One element inside, and an empty range at the end.
  float one = -3.5f;
  ASSERT_EQ(run.io(true, 7, 0, 1999, 1, &one), STRATA_OK) << run.message();
  EXPECT_EQ(run.io(false, 7, 0, 2117, 0, nullptr), STRATA_OK) << run.message();
  EXPECT_EQ(run.slot(3, 0)[2000 + 1999], -3.5f);
  EXPECT_EQ(run.step(2), STRATA_OK) << run.message();
}

INSTANTIATE_TEST_SUITE_P(Stores, OffloadStateIo,
                         ::testing::Values(kNone, kCpu, kNvmeSmall, kNvmeOnePiece),
                         [](const auto& info) { return info.param.name; });

struct ResumeCase {
  OptCase optimizer;
  Store first;   // the uninterrupted run's store
  Store second;  // the resumed run's store
};

void PrintTo(const ResumeCase& c, std::ostream* os) {
  *os << c.optimizer.name << " " << c.first.name << "->" << c.second.name;
}

class OffloadResume : public ::testing::TestWithParam<ResumeCase> {};

// 5 steps, then the parameters and every slot are read (layout A, store 1) and written into a
// fresh instance (layout B, store 2), which takes steps 6-10: the same bits as 10 steps at once.
TEST_P(OffloadResume, MatchesTheUninterruptedRunBitForBit) {
  const ResumeCase& c = GetParam();
  ScratchDir dir;
  OptRun whole(config_of(c.optimizer.optimizer, c.first, dir.path()), kCutsA);
  for (uint64_t t = 1; t <= 5; ++t) ASSERT_EQ(whole.step(t), STRATA_OK) << whole.message();
  OptRun resumed(config_of(c.optimizer.optimizer, c.second, dir.path()), kCutsB);
  const auto slots = static_cast<uint32_t>(c.optimizer.slots.size());
  for (size_t p = 0; p < kParams.size(); ++p) {
    resumed.set_param(p, whole.param(p));
    for (uint32_t s = 0; s < slots; ++s) resumed.set_slot(p, s, whole.slot(p, s));
  }
  for (uint64_t t = 6; t <= 10; ++t) {
    ASSERT_EQ(whole.step(t), STRATA_OK) << whole.message();
    ASSERT_EQ(resumed.step(t), STRATA_OK) << resumed.message();
  }
  for (size_t p = 0; p < kParams.size(); ++p) {
    EXPECT_EQ(resumed.param(p), whole.param(p)) << "param " << p;
    for (uint32_t s = 0; s < slots; ++s) {
      EXPECT_EQ(resumed.slot(p, s), whole.slot(p, s)) << "param " << p << " slot " << s;
    }
  }
}

std::vector<ResumeCase> resume_cases() {
  std::vector<ResumeCase> cases;
  for (const OptCase& o : kOptimizers) {
    cases.push_back({o, kNone, kNone});
    cases.push_back({o, kNvmeSmall, kCpu});
    cases.push_back({o, kCpu, kNvmeSmall});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Optimizers, OffloadResume, ::testing::ValuesIn(resume_cases()),
                         [](const auto& info) {
                           return info.param.optimizer.name + "_" + info.param.first.name + "_" +
                                  info.param.second.name;
                         });

// The step's lr, momentum and beta2 (ABI 1.6) against configuring the same values; NaN is the
// configured value, as is an args struct from before 1.6. SGD ignores beta2.
struct OverrideCase {
  std::string name;
  std::string configured;  // lr 0.01, momentum/beta1 0.9, beta2 0.99
  std::string wanted;      // lr 0.02, momentum/beta1 0.8, beta2 0.95
};

class OffloadStepOverrides : public ::testing::TestWithParam<OverrideCase> {};

TEST_P(OffloadStepOverrides, EqualConfiguringThem) {
  const OverrideCase& c = GetParam();
  ScratchDir dir;
  OptRun overridden(config_of(c.configured, kNvmeSmall, dir.path()), kCutsA);
  OptRun configured(config_of(c.wanted, kNone, dir.path()), kCutsA);
  OptRun as_configured(config_of(c.configured, kNone, dir.path()), kCutsA);
  OptRun old_args(config_of(c.configured, kNone, dir.path()), kCutsA);
  for (uint64_t t = 1; t <= 6; ++t) {
    ASSERT_EQ(overridden.step(t, 0.02, 0.8, 0.95), STRATA_OK) << overridden.message();
    ASSERT_EQ(configured.step(t), STRATA_OK) << configured.message();
    ASSERT_EQ(as_configured.step(t, kNaN, kNaN, kNaN), STRATA_OK) << as_configured.message();
    // A 1.5-sized args struct: lr, momentum and beta2 (here nonsense) are not read.
    ASSERT_EQ(old_args.step(t, -5.0, 7.0, 9.0, offsetof(strata_step_args, lr)), STRATA_OK)
        << old_args.message();
  }
  for (size_t p = 0; p < kParams.size(); ++p) {
    EXPECT_EQ(overridden.param(p), configured.param(p)) << "param " << p;
  }
  OptRun reference(config_of(c.configured, kNone, dir.path()), kCutsA);
  const double beta2 = c.name == "AdamW" ? 0.999 : 0.99;
  for (uint64_t t = 1; t <= 6; ++t) ASSERT_EQ(reference.step(t, 0.01, 0.9, beta2), STRATA_OK);
  for (size_t p = 0; p < kParams.size(); ++p) {
    EXPECT_EQ(as_configured.param(p), reference.param(p)) << "param " << p << ": NaN";
    EXPECT_EQ(old_args.param(p), reference.param(p)) << "param " << p << ": 1.5 args";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, OffloadStepOverrides,
    ::testing::Values(
        OverrideCase{"Adam", R"({"type": "Adam", "params": {"lr": 0.01, "betas": [0.9, 0.99]}})",
                     R"({"type": "Adam", "params": {"lr": 0.02, "betas": [0.8, 0.95]}})"},
        OverrideCase{"AdamW",
                     R"({"type": "AdamW", "params": {"lr": 0.01, "betas": [0.9, 0.999]}})",
                     R"({"type": "AdamW", "params": {"lr": 0.02, "betas": [0.8, 0.95]}})"},
        OverrideCase{"Sgd",
                     R"({"type": "SGD", "params": {"lr": 0.01, "momentum": 0.9, "nesterov": true}})",
                     R"({"type": "SGD", "params": {"lr": 0.02, "momentum": 0.8, "nesterov": true}})"},
        OverrideCase{"Lion", R"({"type": "Lion", "params": {"lr": 0.01, "betas": [0.9, 0.99]}})",
                     R"({"type": "Lion", "params": {"lr": 0.02, "betas": [0.8, 0.95]}})"}),
    [](const auto& info) { return info.param.name; });

TEST(OffloadCheckpoint, BadArgumentsNameShardSlotAndRange) {
  ScratchDir dir;
  const std::string adam = kOptimizers[0].optimizer;
  {
    FakeHost host;
    Instance<strata_offload_ops> fresh(offload_ops(), host, config_of(adam, kNone, dir.path()));
    float x = 0;
    const strata_state_io_args args{sizeof(strata_state_io_args), 0, 0, 0, 1, &x};
    strata_error err = sdk::make_error();
    EXPECT_EQ(fresh.ops().read_state(fresh.self(), &args, &err), STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(err.message).find("init_state"), std::string::npos) << err.message;
  }
  for (const Store& store : {kNone, kNvmeSmall}) {
    SCOPED_TRACE(store.name);
    OptRun run(config_of(adam, store, dir.path()), kCutsA);
    float data[4] = {};
    EXPECT_EQ(run.io(false, 10, 0, 0, 1, data), STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_NE(run.message().find("shard 10 out of range: init_state had 10 shards"),
              std::string::npos)
        << run.message();
    EXPECT_EQ(run.io(true, 2, 2, 0, 1, data), STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_NE(run.message().find("write_state: shard 2 slot 2 out of range: the optimizer keeps 2"),
              std::string::npos)
        << run.message();
    EXPECT_EQ(run.io(false, 0, 1, 50, 3, data), STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_NE(run.message().find("shard 0 slot 1 elements [50, 50 + 3) out of range: the shard "
                                 "has 52 elements"),
              std::string::npos)
        << run.message();
    EXPECT_EQ(run.io(false, 0, 0, 53, 0, data), STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(run.io(false, 0, 0, UINT64_MAX, 2, data), STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(run.io(false, 0, 0, 1, UINT64_MAX, data), STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(run.io(true, 0, 0, 0, 4, nullptr), STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_NE(run.message().find("data is NULL with count 4"), std::string::npos)
        << run.message();
    EXPECT_EQ(run.step(1, -1.0), STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_NE(run.message().find("args.lr"), std::string::npos) << run.message();
    EXPECT_EQ(run.step(1, kNaN, 1.0), STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_NE(run.message().find("args.momentum"), std::string::npos) << run.message();
    EXPECT_EQ(run.step(1, kNaN, kNaN, 1.5), STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_NE(run.message().find("args.beta2"), std::string::npos) << run.message();
  }
  OptRun plain(config_of(R"({"type": "SGD", "params": {"lr": 0.05}})", kNvmeSmall, dir.path()),
            kCutsA);
  float x = 0;
  EXPECT_EQ(plain.io(false, 0, 0, 0, 1, &x), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(plain.message().find("keeps 0 slots"), std::string::npos) << plain.message();
  EXPECT_EQ(plain.step(1, kNaN, 0.9), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(plain.message().find("without momentum"), std::string::npos) << plain.message();
  EXPECT_EQ(plain.step(1, kNaN, 0.0), STRATA_OK) << plain.message();
}

}  // namespace
}  // namespace strata::test
