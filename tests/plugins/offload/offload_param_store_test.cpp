// strata_offload's parameter store (ABI 1.8, offload_param): where the sharding stratum keeps its
// parameter partition. In host memory it hands out the bytes (zeroed, accounted as parameters);
// on a drive it is one private unlinked file, accounted on disk, whose transfers round-trip
// whatever their number in flight and agree with its shared mapping (ABI 1.9); a directory that is missing, not writable or too small is
// refused at open, naming the path and the bytes needed, and leaves nothing behind.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <gtest/gtest.h>
#include <numeric>
#include <string>
#include <vector>

#include "optim_harness.hpp"

namespace strata::test {
namespace {

namespace fs = std::filesystem;

std::string adam_with_params(const std::string& offload_param) {
  return R"({"optimizer": {"type": "Adam"}, "offload_param": )" + offload_param + "}";
}

std::string adam_with_params_on_nvme(const std::string& path) {
  return adam_with_params(R"({"device": "nvme", "nvme_path": ")" + path + R"("})");
}

strata_param_store_args store_args(uint64_t bytes) {
  strata_param_store_args args{};
  args.struct_size = sizeof args;
  args.bytes = bytes;
  return args;
}

strata_status transfer(const Instance<strata_offload_ops>& opt, int32_t write, uint64_t offset,
                       void* data, uint64_t bytes, uint64_t* ticket, strata_error* err) {
  strata_param_io_args io{};
  io.struct_size = sizeof io;
  io.write = write;
  io.offset = offset;
  io.bytes = bytes;
  io.data = data;
  return opt.ops().param_store_start(opt.self(), &io, ticket, err);
}

TEST(OffloadParamStore, NoneOpensNothing) {
  FakeHost host;
  Instance<strata_offload_ops> opt(offload_ops(), host, adam_with_params(R"({"device": "none"})"));
  ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();
  strata_param_store_args args = store_args(4096);
  strata_error err = sdk::make_error();
  ASSERT_EQ(opt.ops().param_store_open(opt.self(), &args, &err), STRATA_OK) << err.message;
  EXPECT_EQ(args.location, -1);
  EXPECT_EQ(args.data, nullptr);
  EXPECT_EQ(host.bytes(STRATA_MEM_PARAMS), 0u);
}

TEST(OffloadParamStore, CpuHandsOutZeroedAccountedMemory) {
  FakeHost host;
  {
    Instance<strata_offload_ops> opt(offload_ops(), host, adam_with_params(R"({"device": "cpu"})"));
    ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();
    strata_param_store_args args = store_args(10000);
    strata_error err = sdk::make_error();
    ASSERT_EQ(opt.ops().param_store_open(opt.self(), &args, &err), STRATA_OK) << err.message;
    EXPECT_EQ(args.location, STRATA_MEM_HOST);
    ASSERT_NE(args.data, nullptr);
    const auto* bytes = static_cast<const unsigned char*>(args.data);
    EXPECT_TRUE(std::all_of(bytes, bytes + 10000, [](unsigned char b) { return b == 0; }));
    EXPECT_EQ(host.located(STRATA_MEM_HOST, STRATA_MEM_PARAMS), 10000u);
    // Transfers work on memory stores too (done on return).
    std::vector<unsigned char> out(100, 7), back(100, 0);
    uint64_t ticket = 0;
    ASSERT_EQ(transfer(opt, 1, 9900, out.data(), 100, &ticket, &err), STRATA_OK) << err.message;
    ASSERT_EQ(opt.ops().param_store_wait(opt.self(), ticket, &err), STRATA_OK) << err.message;
    EXPECT_EQ(bytes[9950], 7);
    ASSERT_EQ(transfer(opt, 0, 9900, back.data(), 100, &ticket, &err), STRATA_OK);
    ASSERT_EQ(opt.ops().param_store_wait(opt.self(), ticket, &err), STRATA_OK);
    EXPECT_EQ(back, out);
    // A second open is a caller's bug.
    EXPECT_EQ(opt.ops().param_store_open(opt.self(), &args, &err), STRATA_ERR_INVALID_ARGUMENT);
  }
  EXPECT_EQ(host.bytes(STRATA_MEM_PARAMS), 0u);
}

TEST(OffloadParamStore, NvmeFileIsPrivateAccountedAndRoundTripsManyTransfersInFlight) {
  ScratchDir dir;
  FakeHost host;
  const uint64_t bytes = 1000 * 1000;
  {
    Instance<strata_offload_ops> opt(offload_ops(), host, adam_with_params_on_nvme(dir.path()));
    ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();
    strata_param_store_args args = store_args(bytes);
    strata_error err = sdk::make_error();
    ASSERT_EQ(opt.ops().param_store_open(opt.self(), &args, &err), STRATA_OK) << err.message;
    EXPECT_EQ(args.location, STRATA_MEM_DISK);
    ASSERT_NE(args.data, nullptr) << "ABI 1.9: the file is mapped shared";
    EXPECT_EQ(args.read_ahead_elements, 5u * 100000000u);  // DeepSpeed's 5 buffers of 1e8
    EXPECT_EQ(dir.entries(), 0u) << "the file is unlinked at once";
    EXPECT_EQ(host.located(STRATA_MEM_DISK, STRATA_MEM_PARAMS), bytes);
    EXPECT_EQ(host.bytes(STRATA_MEM_PARAMS), 0u) << "nothing of it in memory";

    // 100 writes of 10000 bytes in flight at once (more than the queue's tags), then 100 reads.
    std::vector<unsigned char> data(bytes), back(bytes, 0);
    std::iota(data.begin(), data.end(), 0);
    std::vector<uint64_t> tickets(100);
    for (size_t i = 0; i < 100; ++i) {
      ASSERT_EQ(transfer(opt, 1, i * 10000, data.data() + i * 10000, 10000, &tickets[i], &err),
                STRATA_OK)
          << err.message;
    }
    for (uint64_t t : tickets) ASSERT_EQ(opt.ops().param_store_wait(opt.self(), t, &err), STRATA_OK);
    for (size_t i = 0; i < 100; ++i) {
      ASSERT_EQ(transfer(opt, 0, i * 10000, back.data() + i * 10000, 10000, &tickets[i], &err),
                STRATA_OK);
    }
    for (size_t i = 100; i-- > 0;) {  // waited in reverse order
      ASSERT_EQ(opt.ops().param_store_wait(opt.self(), tickets[i], &err), STRATA_OK) << err.message;
    }
    EXPECT_EQ(back, data);
    // The mapping and the transfers see the same bytes, both ways.
    auto* mapped = static_cast<unsigned char*>(args.data);
    EXPECT_TRUE(std::equal(data.begin(), data.end(), mapped));
    mapped[123457] = 7;
    ASSERT_EQ(transfer(opt, 0, 123456, back.data(), 2, &tickets[0], &err), STRATA_OK);
    ASSERT_EQ(opt.ops().param_store_wait(opt.self(), tickets[0], &err), STRATA_OK);
    EXPECT_EQ(back[1], 7);
    unsigned char nine[2] = {9, 9};
    ASSERT_EQ(transfer(opt, 1, 500000, nine, 2, &tickets[0], &err),
              STRATA_OK);
    ASSERT_EQ(opt.ops().param_store_wait(opt.self(), tickets[0], &err), STRATA_OK);
    EXPECT_EQ(mapped[500001], 9);
    // A ticket is spent by its wait; outside the store is refused.
    EXPECT_EQ(opt.ops().param_store_wait(opt.self(), tickets[0], &err), STRATA_ERR_INVALID_ARGUMENT);
    uint64_t ticket = 0;
    EXPECT_EQ(transfer(opt, 0, bytes - 10, back.data(), 11, &ticket, &err),
              STRATA_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(err.message).find("outside the store's 1000000 bytes"), std::string::npos)
        << err.message;
  }
  EXPECT_EQ(host.located(STRATA_MEM_DISK, STRATA_MEM_PARAMS), 0u);
}

// Opening fails with the key, the path and what was expected; nothing is left or accounted.
void expect_refused(const std::string& path, uint64_t bytes, const std::string& expected) {
  FakeHost host;
  Instance<strata_offload_ops> opt(offload_ops(), host, adam_with_params_on_nvme(path));
  ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();
  strata_param_store_args args = store_args(bytes);
  strata_error err = sdk::make_error();
  EXPECT_EQ(opt.ops().param_store_open(opt.self(), &args, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find(expected), std::string::npos) << err.message;
  EXPECT_EQ(host.located(STRATA_MEM_DISK, STRATA_MEM_PARAMS), 0u);
}

TEST(OffloadParamStore, MissingDirectoryIsRefusedNamingIt) {
  ScratchDir dir;
  expect_refused(dir.path() + "/nope", 4096,
                 "offload_param.nvme_path: " + dir.path() + "/nope does not exist");
}

TEST(OffloadParamStore, UnwritableDirectoryIsRefusedNamingIt) {
  ScratchDir dir;
  std::string path = dir.path();
  if (::geteuid() == 0) {
    // root writes through mode bits: sysfs refuses new files to everyone.
    path = "/sys/kernel";
    if (!fs::is_directory(path)) GTEST_SKIP() << "running as root without /sys/kernel to try";
  } else {
    ASSERT_EQ(::chmod(path.c_str(), 0500), 0);
  }
  expect_refused(path, 4096, "offload_param.nvme_path: cannot create a file in " + path);
}

TEST(OffloadParamStore, DriveTooSmallIsRefusedNamingTheBytesNeeded) {
  ScratchDir dir;
  expect_refused(dir.path(), uint64_t{1} << 53,
                 "available but this rank's parameter partition needs 8.0 PiB (" +
                     std::to_string(uint64_t{1} << 53) + " bytes)");
  EXPECT_EQ(dir.entries(), 0u);
}

// ABI 1.8: init_state reads the shards' ranges only (a sharding plugin's shard_ranges give NULL
// buffers, so that a paged-out master partition stays out); the step still needs the buffers.
TEST(OffloadParamStore, InitStateTakesRangesWithoutBuffersAndTheStepTheBuffers) {
  ScratchDir dir;
  FakeHost host;
  Instance<strata_offload_ops> opt(
      offload_ops(), host,
      R"({"optimizer": {"type": "Adam"}, "offload_optimizer": {"device": "nvme", "nvme_path": ")" +
          dir.path() + R"("}})");
  ASSERT_EQ(opt.status(), STRATA_OK) << opt.message();
  ShardSet shards({100, 28});
  std::vector<strata_shard> ranges(shards.data(), shards.data() + shards.size());
  for (strata_shard& r : ranges) r.master = r.grad = nullptr;
  strata_error err = sdk::make_error();
  ASSERT_EQ(opt.ops().init_state(opt.self(), ranges.data(), ranges.size(), &err), STRATA_OK)
      << err.message;
  EXPECT_GT(host.located(STRATA_MEM_DISK, STRATA_MEM_OPTIMIZER_STATE), 0u);
  strata_step_args args{};
  args.struct_size = sizeof args;
  args.step = 1;
  args.grad_scale = 1.0;
  args.lr_factor = 1.0;
  args.lr = args.momentum = args.beta2 = std::nan("");
  EXPECT_EQ(opt.ops().step(opt.self(), ranges.data(), ranges.size(), &args, &err),
            STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("master and grad must not be NULL"), std::string::npos)
      << err.message;
  shards.grad(0).assign(100, 0.5f);
  EXPECT_EQ(opt.ops().step(opt.self(), shards.data(), shards.size(), &args, &err), STRATA_OK)
      << err.message;
  EXPECT_NE(shards.master(0)[0], 0.0f) << "the step moved the masters";
}

}  // namespace
}  // namespace strata::test
