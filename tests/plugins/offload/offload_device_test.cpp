// strata_offload with the optimizer state on other devices: host memory (pinned or not) and files
// on a drive (nvme). The state's location must not change a single parameter; the files must be
// private, gone at exit and accounted; a drive too small fails before the first step.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "optim_harness.hpp"
#include "strata/half.hpp"

namespace strata::test {
namespace {

namespace fs = std::filesystem;

// This process's open files that live (or lived, before unlink) in `dir`, as /proc/self/fd paths.
std::vector<std::string> open_files_in(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(entry.path(), ec);
    if (!ec && target.string().rfind(dir + "/", 0) == 0) found.push_back(entry.path().string());
  }
  return found;
}

std::string with_offload(const std::string& optimizer, const std::string& offload,
                         uint64_t sub_group_size) {
  return R"({"optimizer": )" + optimizer + R"(, "offload_optimizer": )" + offload +
         R"(, "sub_group_size": )" + std::to_string(sub_group_size) + "}";
}

// Runs `steps` steps on fixed shards with seeded gradients; returns the final masters.
std::vector<std::vector<float>> train(const std::string& config, int steps) {
  FakeHost host;
  Instance<strata_offload_ops> opt(offload_ops(), host, config);
  EXPECT_EQ(opt.status(), STRATA_OK) << opt.message();
  if (opt.status() != STRATA_OK) return {};
  ShardSet shards({3, 101, 1, 0, 64, 999, 17, 4100});
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t i = 0; i < shards.size(); ++i) {
    for (float& m : shards.master(i)) m = normal(rng);
  }
  strata_error err = sdk::make_error();
  EXPECT_EQ(opt.ops().init_state(opt.self(), shards.data(), shards.size(), &err), STRATA_OK)
      << err.message;
  for (int t = 1; t <= steps; ++t) {
    for (size_t i = 0; i < shards.size(); ++i) {
      for (float& g : shards.grad(i)) g = normal(rng);
    }
    const strata_step_args args = sdk::make_step_args(static_cast<uint64_t>(t), 0.5, 1.0);
    EXPECT_EQ(opt.ops().step(opt.self(), shards.data(), shards.size(), &args, &err), STRATA_OK)
        << err.message;
  }
  std::vector<std::vector<float>> masters;
  for (size_t i = 0; i < shards.size(); ++i) masters.push_back(shards.master(i));
  return masters;
}

struct DeviceCase {
  std::string name;
  std::string offload;  // the offload_optimizer block
  uint64_t sub_group_size;
};

void PrintTo(const DeviceCase& c, std::ostream* os) { *os << c.name << " " << c.offload; }

class OffloadDevice : public ::testing::TestWithParam<DeviceCase> {};

// Every optimizer, 40 steps: the same parameters as with the state beside them, within 1e-6 of
// each tensor's magnitude (the kernels are element-wise, so in practice bit for bit).
TEST_P(OffloadDevice, GivesTheParametersOfDeviceNone) {
  const DeviceCase& c = GetParam();
  ScratchDir dir;
  std::string offload = c.offload;
  const auto at = offload.find("$DIR");
  if (at != std::string::npos) offload.replace(at, 4, dir.path());
  for (const char* optimizer :
       {R"({"type": "Adam", "params": {"lr": 0.01, "weight_decay": 0.1}})",
        R"({"type": "AdamW", "params": {"lr": 0.01}})",
        R"({"type": "SGD", "params": {"lr": 0.05, "momentum": 0.9, "nesterov": true}})",
        R"({"type": "SGD", "params": {"lr": 0.05}})",
        R"({"type": "Lion", "params": {"lr": 0.001, "weight_decay": 0.5}})"}) {
    SCOPED_TRACE(optimizer);
    const auto expected = train(with_offload(optimizer, R"({"device": "none"})", 1000000000), 40);
    const auto got = train(with_offload(optimizer, offload, c.sub_group_size), 40);
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i) {
      float scale = 0, worst = 0;
      for (size_t k = 0; k < got[i].size(); ++k) {
        scale = std::max(scale, std::abs(expected[i][k]));
        worst = std::max(worst, std::abs(got[i][k] - expected[i][k]));
      }
      EXPECT_LE(worst, 1e-6f * scale) << "shard " << i;
    }
    EXPECT_EQ(dir.entries(), 0u) << "state files left in " << dir.path();
  }
}

INSTANTIATE_TEST_SUITE_P(
    Offload, OffloadDevice,
    ::testing::Values(
        DeviceCase{"Cpu", R"({"device": "cpu"})", 1000000000},
        DeviceCase{"CpuPinned", R"({"device": "cpu", "pin_memory": true})", 1000000000},
        // 87 pieces of 61 elements: piece boundaries fall inside shards and between them, and
        // short shards share a piece.
        DeviceCase{"NvmeSmallPieces", R"({"device": "nvme", "nvme_path": "$DIR",
                   "buffer_count": 2})", 61},
        DeviceCase{"NvmeThreeBuffers", R"({"device": "nvme", "nvme_path": "$DIR",
                   "buffer_count": 3, "pin_memory": true})", 1000},
        DeviceCase{"NvmeMoreBuffersThanPieces", R"({"device": "nvme", "nvme_path": "$DIR",
                   "buffer_count": 8})", 3000},
        DeviceCase{"NvmeOnePiece", R"({"device": "nvme", "nvme_path": "$DIR"})", 1000000000}),
    [](const auto& info) { return info.param.name; });

// Where the kernel refuses io_uring the same transfers run synchronously (forced here with
// STRATA_NVME_SYNC_IO=1): same parameters, and the plugin warns that nothing overlaps.
TEST(OffloadNvme, SynchronousFallbackGivesTheSameParameters) {
  ScratchDir dir;
  const std::string optimizer = R"({"type": "Adam", "params": {"lr": 0.01}})";
  const std::string nvme =
      R"({"device": "nvme", "buffer_count": 2, "nvme_path": ")" + dir.path() + "\"}";
  const auto expected = train(with_offload(optimizer, nvme, 61), 20);
  ::setenv("STRATA_NVME_SYNC_IO", "1", 1);
  const auto got = train(with_offload(optimizer, nvme, 61), 20);
  ::unsetenv("STRATA_NVME_SYNC_IO");
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(got, expected);
  // The plugin says which path it took, in the line that says where the state is.
  static std::vector<std::string> lines;
  lines.clear();
  FakeHost host;
  host.api()->log = [](void*, int32_t, const char* message) { lines.emplace_back(message); };
  ::setenv("STRATA_NVME_SYNC_IO", "1", 1);
  {
    Instance<strata_offload_ops> opt(offload_ops(), host, with_offload(optimizer, nvme, 61));
    ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();
    ShardSet shards({100});
    strata_error err = sdk::make_error();
    EXPECT_EQ(opt.ops().init_state(opt.self(), shards.data(), shards.size(), &err), STRATA_OK)
        << err.message;
  }
  ::unsetenv("STRATA_NVME_SYNC_IO");
  const auto said = [&](const std::string& text) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(said("io_uring is unavailable (STRATA_NVME_SYNC_IO=1)"));
  EXPECT_TRUE(said("synchronous I/O)"));
  EXPECT_EQ(dir.entries(), 0u);
}

std::string nvme_adam(const std::string& dir, uint64_t sub_group_size) {
  return with_offload(R"({"type": "Adam"})",
                      R"({"device": "nvme", "buffer_count": 2, "nvme_path": ")" + dir + "\"}",
                      sub_group_size);
}

// The state file: mode 0600, already unlinked while in use (nothing to clean up after a crash),
// its bytes reported on disk while the state exists and given back after.
TEST(OffloadNvme, StateFileIsPrivateUnlinkedAndAccounted) {
  ScratchDir dir;
  FakeHost host;
  {
    Instance<strata_offload_ops> opt(offload_ops(), host, nvme_adam(dir.path(), 100));
    ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();
    EXPECT_TRUE(open_files_in(dir.path()).empty()) << "create keeps no file open";
    ShardSet shards({1000, 24});
    strata_error err = sdk::make_error();
    ASSERT_EQ(opt.ops().init_state(opt.self(), shards.data(), shards.size(), &err), STRATA_OK)
        << err.message;
    const auto files = open_files_in(dir.path());
    ASSERT_EQ(files.size(), 1u);
    EXPECT_NE(fs::read_symlink(files[0]).string().find("(deleted)"), std::string::npos)
        << fs::read_symlink(files[0]);
    struct stat st {};
    ASSERT_EQ(::stat(files[0].c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(dir.entries(), 0u);
    // 1024 elements × 2 Adam moments in 11 pieces of 100 elements, each slot padded to 4 KiB.
    EXPECT_EQ(host.located(STRATA_MEM_DISK, STRATA_MEM_OPTIMIZER_STATE), 11u * 4096u);
    EXPECT_EQ(static_cast<uint64_t>(st.st_size), 11u * 4096u);
    // In memory: the two buffers only, not the state.
    EXPECT_EQ(host.bytes(STRATA_MEM_OPTIMIZER_STATE), 2u * 4096u);
  }
  EXPECT_EQ(host.located(STRATA_MEM_DISK, STRATA_MEM_OPTIMIZER_STATE), 0u);
  EXPECT_EQ(host.bytes(STRATA_MEM_OPTIMIZER_STATE), 0u);
  EXPECT_TRUE(open_files_in(dir.path()).empty());
}

// A drive too small for the state fails at init_state (before training), naming both sizes, and
// leaves nothing behind: no file, no accounted bytes.
TEST(OffloadNvme, FullDriveFailsBeforeTrainingNamingBytesNeededAndAvailable) {
  ScratchDir dir;
  FakeHost host;
  Instance<strata_offload_ops> opt(offload_ops(), host, nvme_adam(dir.path(), 1u << 20));
  ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();
  // 2^50 elements (8 PiB of Adam state): more than any drive here. The memory is never touched.
  float dummy = 0;
  strata_shard huge{};
  huge.struct_size = sizeof(huge);
  huge.count = uint64_t{1} << 50;
  huge.master = &dummy;
  huge.grad = &dummy;
  strata_error err = sdk::make_error();
  EXPECT_EQ(opt.ops().init_state(opt.self(), &huge, 1, &err), STRATA_ERR_INVALID_ARGUMENT);
  const std::string message = err.message;
  EXPECT_NE(message.find("offload_optimizer.nvme_path: " + dir.path() + " has "),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("available but this rank's optimizer state needs 8.0 PiB (" +
                         std::to_string(uint64_t{8} << 50) + " bytes)"),
            std::string::npos)
      << message;
  EXPECT_EQ(host.located(STRATA_MEM_DISK, STRATA_MEM_OPTIMIZER_STATE), 0u);
  EXPECT_EQ(host.bytes(STRATA_MEM_OPTIMIZER_STATE), 0u);
  EXPECT_EQ(dir.entries(), 0u);
  // And the instance is still usable for a state that fits.
  ShardSet shards({10});
  EXPECT_EQ(opt.ops().init_state(opt.self(), shards.data(), shards.size(), &err), STRATA_OK)
      << err.message;
}

// device cpu with pin_memory: the state is page-locked when the system allows it, and counted as
// pinned; when it refuses, the state stays pageable and counted as such (never lost).
TEST(OffloadCpu, PinnedStateIsCountedWhereItLives) {
  FakeHost host;
  Instance<strata_offload_ops> opt(
      offload_ops(), host,
      with_offload(R"({"type": "Adam"})", R"({"device": "cpu", "pin_memory": true})", 1000));
  ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();
  ShardSet shards({1000, 24});
  strata_error err = sdk::make_error();
  ASSERT_EQ(opt.ops().init_state(opt.self(), shards.data(), shards.size(), &err), STRATA_OK)
      << err.message;
  const uint64_t state = 2u * sizeof(float) * 1024u;
  const uint64_t pinned = host.located(STRATA_MEM_HOST_PINNED, STRATA_MEM_OPTIMIZER_STATE);
  const uint64_t pageable = host.located(STRATA_MEM_HOST, STRATA_MEM_OPTIMIZER_STATE);
  EXPECT_EQ(pinned + pageable, state);
  EXPECT_TRUE(pinned == state || pageable == state) << "all in one place";
  if (pinned == 0) GTEST_SKIP() << "this system refused mlock; the state stayed pageable";
}

// ABI 1.2 model copies: a shard that names an f16/bf16 destination gets its updated master written
// there, rounded to nearest even, in the step's own pass; whatever the state's device and piece
// boundaries. With fused_copy_out false the plugin says so in its caps and leaves them alone.
struct CopyCase {
  std::string offload;
  uint64_t sub_group_size;
  bool fused;
};

void PrintTo(const CopyCase& c, std::ostream* os) {
  *os << c.offload << " sub_group_size " << c.sub_group_size << (c.fused ? " fused" : " not fused");
}

class OffloadModelCopy : public ::testing::TestWithParam<CopyCase> {};

TEST_P(OffloadModelCopy, WritesTheRoundedMastersWhereTheShardsSay) {
  const CopyCase& c = GetParam();
  ScratchDir dir;
  std::string offload = c.offload;
  if (const auto at = offload.find("$DIR"); at != std::string::npos) {
    offload.replace(at, 4, dir.path());
  }
  std::string config = with_offload(R"({"type": "AdamW", "params": {"lr": 0.01}})", offload,
                                    c.sub_group_size);
  if (!c.fused) config.insert(1, R"("fused_copy_out": false, )");
  FakeHost host;
  Instance<strata_offload_ops> opt(offload_ops(), host, config);
  ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();
  strata_offload_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.writes_model_copy = -1;
  strata_error err = sdk::make_error();
  ASSERT_EQ(opt.ops().query(opt.self(), &caps, &err), STRATA_OK) << err.message;
  EXPECT_EQ(caps.writes_model_copy, c.fused ? 1 : 0);

  ShardSet shards({300, 77, 1, 500});
  std::vector<std::vector<uint16_t>> models(shards.size());
  std::vector<strata_shard> list(shards.data(), shards.data() + shards.size());
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t i = 0; i < list.size(); ++i) {
    for (float& m : shards.master(i)) m = normal(rng);
    for (float& g : shards.grad(i)) g = normal(rng);
    models[i].assign(list[i].count, 0xABCD);  // a sentinel no rounding produces here
    list[i].model = models[i].data();
    list[i].model_dtype = i % 2 == 0 ? STRATA_F16 : STRATA_BF16;
  }
  ASSERT_EQ(opt.ops().init_state(opt.self(), list.data(), list.size(), &err), STRATA_OK)
      << err.message;
  for (uint64_t t = 1; t <= 3; ++t) {
    const strata_step_args args = sdk::make_step_args(t, 1.0, 1.0);
    ASSERT_EQ(opt.ops().step(opt.self(), list.data(), list.size(), &args, &err), STRATA_OK)
        << err.message;
  }
  for (size_t i = 0; i < list.size(); ++i) {
    for (size_t k = 0; k < models[i].size(); ++k) {
      const float m = shards.master(i)[k];
      const uint16_t expected = !c.fused ? uint16_t{0xABCD}
                                : list[i].model_dtype == STRATA_F16 ? float_to_f16(m)
                                                                    : float_to_bf16(m);
      ASSERT_EQ(models[i][k], expected) << "shard " << i << " element " << k << " master " << m;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Offload, OffloadModelCopy,
    ::testing::Values(CopyCase{R"({"device": "none"})", 1000000000, true},
                      CopyCase{R"({"device": "cpu"})", 1000000000, false},
                      CopyCase{R"({"device": "nvme", "nvme_path": "$DIR", "buffer_count": 2})",
                               61, true}));

TEST(OffloadModelCopy, RejectsAModelCopyThatIsNotHalfPrecision) {
  FakeHost host;
  Instance<strata_offload_ops> opt(offload_ops(), host, R"({"optimizer": {"type": "Adam"}})");
  ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();
  ShardSet shards({8});
  strata_shard shard = shards.data()[0];
  std::vector<float> model(8);
  shard.model = model.data();
  shard.model_dtype = STRATA_F32;
  strata_error err = sdk::make_error();
  EXPECT_EQ(opt.ops().init_state(opt.self(), &shard, 1, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("shards[0].model_dtype: expected f16 or bf16"),
            std::string::npos)
      << err.message;
}

}  // namespace
}  // namespace strata::test
