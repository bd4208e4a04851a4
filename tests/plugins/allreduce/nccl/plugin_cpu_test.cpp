// The NCCL comm plugin where no GPU is needed: its descriptor passes strata-plugin-check's
// descriptor checks, a bad config is refused naming the key before any device is touched, and on
// a machine without a device create() fails naming the rank (run alone and under mpirun).
#include <gpu_env.hpp>

#include <descriptor_checks.hpp>
#include <plugin_harness.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

using strata::test::FakeHost;
using strata::test::PluginLibrary;

const PluginLibrary& plugin() {
  static const PluginLibrary library(STRATA_ALLREDUCE_NCCL_PLUGIN);
  return library;
}

struct Created {
  strata_status status;
  std::string message;
  void* self;
};

Created create(const char* config) {
  FakeHost host;
  strata_error err = strata::sdk::make_error();
  void* self = nullptr;
  const strata_status status = plugin().create<strata_comm_ops>(config, host.api(), &self, &err);
  if (self != nullptr) plugin().ops<strata_comm_ops>().destroy(self);
  return {status, status == STRATA_OK ? "" : err.message, self};
}

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "RANK"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return 0;
}

int launcher_local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "LOCAL_RANK"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return 0;
}

TEST(Descriptor, PassesPluginCheckDescriptorChecks) {
  const strata_plugin_descriptor& d = plugin().descriptor();
  EXPECT_STREQ(d.name, "allreduce-nccl");
  const strata::plugin_check::DescriptorReport report = strata::plugin_check::check_descriptor(d);
  EXPECT_EQ(report.stratum, "comm");
  EXPECT_TRUE(report.usable);
  ASSERT_FALSE(report.checks.empty());
  for (const auto& [name, verdict] : report.checks) {
    EXPECT_EQ(verdict.outcome, strata::plugin_check::Outcome::Pass)
        << name << ": " << verdict.detail;
  }
}

TEST(Descriptor, OffersEveryCollectiveNonBlocking) {
  const strata_comm_ops& ops = plugin().ops<strata_comm_ops>();
  for (const void* fn :
       {reinterpret_cast<const void*>(ops.allgatherv),
        reinterpret_cast<const void*>(ops.reduce_scatter), reinterpret_cast<const void*>(ops.wait),
        reinterpret_cast<const void*>(ops.test)}) {
    EXPECT_NE(fn, nullptr);
  }
}

// Every one of these fails in parse_config, before the launcher's environment or a device is read.
TEST(Config, BadKeysAndValuesAreRefusedNamingThem) {
  const struct {
    const char* config;
    const char* expected;
  } cases[] = {
      {R"({"devcie": 0})",
       "comm config: devcie: unknown key; expected one of device, bootstrap, timeout_seconds, "
       "share_device; did you mean 'device'?"},
      {R"({"device": -1})",
       "comm config: device: expected a CUDA ordinal (a non-negative integer), got -1"},
      {R"({"bootstrap": "ssh"})",
       "comm config: bootstrap: expected \"auto\", \"mpi\" or \"tcp\", got \"ssh\""},
      {R"({"timeout_seconds": 0})",
       "comm config: timeout_seconds: expected a positive number of seconds, got 0"},
      {R"({"share_device": "yes"})",
       "comm config: share_device: expected true or false, got \"yes\""},
      {R"([1, 2])", "comm config: expected a JSON object, got [1,2]"},
      {R"({"device": )", "comm config: not valid JSON: "},
  };
  for (const auto& c : cases) {
    const Created created = create(c.config);
    EXPECT_EQ(created.status, STRATA_ERR_INVALID_ARGUMENT) << c.config;
    EXPECT_NE(created.message.find(c.expected), std::string::npos)
        << c.config << "\n  got: " << created.message << "\n  expected: " << c.expected;
  }
}

// Alone and as every rank of an mpirun job: the message names this process's rank and local rank.
TEST(NoDevice, CreateFailsNamingTheRank) {
  if (strata::test::gpu::device_available())
    GTEST_SKIP() << "a CUDA device is visible: this checks the machine without one";
  const Created created = create(R"({"timeout_seconds": 5})");
  EXPECT_EQ(created.status, STRATA_ERR_UNSUPPORTED);
  const std::string expected = "allreduce-nccl: rank " + std::to_string(launcher_rank()) +
                               " (local rank " + std::to_string(launcher_local_rank()) +
                               "): no CUDA device visible (cudaGetDeviceCount: ";
  EXPECT_NE(created.message.find(expected), std::string::npos)
      << "got: " << created.message << "\nexpected: " << expected;
}

// A configured device cannot bring a device into being: the same message, not a different error.
TEST(NoDevice, ConfiguredDeviceFailsTheSameWay) {
  if (strata::test::gpu::device_available())
    GTEST_SKIP() << "a CUDA device is visible: this checks the machine without one";
  const Created created = create(R"({"device": 0, "bootstrap": "tcp"})");
  EXPECT_EQ(created.status, STRATA_ERR_UNSUPPORTED);
  EXPECT_NE(created.message.find("no CUDA device visible"), std::string::npos) << created.message;
}

}  // namespace
