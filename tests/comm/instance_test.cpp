// Descriptor, capabilities and config validation.
#include "comm_env.hpp"

#include <cstdlib>

namespace strata::test::comm {
namespace {

TEST(Descriptor, IsACommPluginOfThisAbi) {
  EXPECT_EQ(descriptor().kind, STRATA_PLUGIN_COMM);
  EXPECT_EQ(descriptor().abi_major, uint32_t{STRATA_ABI_MAJOR});
  EXPECT_EQ(ops().struct_size, sizeof(strata_comm_ops));
  EXPECT_STREQ(descriptor().name, "allreduce-mpi");
}

TEST(Caps, MatchTheMpiJobAndListEverything) {
  strata_comm_caps caps{};
  caps.struct_size = sizeof caps;
  strata_error err = sdk::make_error();
  ASSERT_EQ(ops().query(instance(), &caps, &err), STRATA_OK) << err.message;
  const char* env_rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const char* env_size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (env_rank != nullptr && env_size != nullptr) {
    EXPECT_EQ(caps.rank, std::atoi(env_rank));
    EXPECT_EQ(caps.size, std::atoi(env_size));
  }
  // mpirun starts every rank on this one machine.
  EXPECT_EQ(caps.local_rank, caps.rank);
  EXPECT_EQ(caps.local_size, caps.size);
  EXPECT_EQ(caps.dtype_mask, (1u << STRATA_DTYPE_COUNT) - 1);
  EXPECT_EQ(caps.collective_mask, 0x3fu);
  EXPECT_EQ(caps.device_mask, STRATA_DEVICE_BIT(STRATA_DEVICE_HOST));
  EXPECT_EQ(caps.nonblocking, 1);
}

TEST(Caps, TooSmallStructIsAnAbiError) {
  strata_comm_caps caps{};
  caps.struct_size = 8;
  strata_error err = sdk::make_error();
  EXPECT_EQ(ops().query(instance(), &caps, &err), STRATA_ERR_ABI);
  EXPECT_EQ(ops().query(instance(), nullptr, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ops().query(nullptr, &caps, &err), STRATA_ERR_INVALID_ARGUMENT);
}

void expect_config_rejected(const char* config, const std::string& mentions) {
  SCOPED_TRACE(config);
  strata_error err = sdk::make_error();
  void* self = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(ops().create(config, host().api(), &self, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(self, nullptr);
  EXPECT_NE(std::string(err.message).find(mentions), std::string::npos) << err.message;
}

TEST(Config, BadValuesAndUnknownKeysAreNamed) {
  expect_config_rejected(R"({"chunk_bytes": -5})",
                         "chunk_bytes: expected a positive integer, got -5");
  expect_config_rejected(R"({"chunk_bytes": 0})", "chunk_bytes");
  expect_config_rejected(R"({"chunk_bytes": 1.5})", "chunk_bytes");
  expect_config_rejected(R"({"chunk_bytes": "4MiB"})", "chunk_bytes");
  expect_config_rejected(R"({"arrival_gate": 1})", "arrival_gate: expected true or false, got 1");
  expect_config_rejected(R"({"arrival_gate": "off"})", "arrival_gate");
  expect_config_rejected(R"({"arrival_gate": null})", "arrival_gate");
  expect_config_rejected(R"({"chunk_size": 4096})", "unknown key 'chunk_size'");
  expect_config_rejected(R"([1, 2])", "expected a JSON object");
  expect_config_rejected(R"({"chunk_bytes": )", "not valid JSON");
}

TEST(Config, MoreInstancesCanLiveSideBySide) {
  strata_error err = sdk::make_error();
  void* self = nullptr;
  ASSERT_EQ(ops().create(R"({"chunk_bytes": 64})", host().api(), &self, &err), STRATA_OK)
      << err.message;
  Bytes data = rank_input(STRATA_I32, rank(), 100);
  strata_buffer buffer = view(data, STRATA_I32);
  run(Mode::Nonblocking, self, [&](strata_request* req, strata_error* e) {
    return ops().allreduce(self, &buffer, &buffer, STRATA_MAX, req, e);
  });
  EXPECT_EQ(
      first_difference(data, expected_reduction(STRATA_I32, STRATA_MAX, world(), 100), STRATA_I32),
      "");
  ops().destroy(self);
  ops().destroy(nullptr);  // allowed
}

TEST(Config, ArrivalGateCanBeTurnedOff) {
  strata_error err = sdk::make_error();
  void* self = nullptr;
  ASSERT_EQ(ops().create(R"({"arrival_gate": false, "chunk_bytes": 64})", host().api(), &self,
                         &err),
            STRATA_OK)
      << err.message;
  for (Mode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    Bytes data = rank_input(STRATA_F32, rank(), 100);
    strata_buffer buffer = view(data, STRATA_F32);
    run(mode, self, [&](strata_request* req, strata_error* e) {
      return ops().allreduce(self, &buffer, &buffer, STRATA_SUM, req, e);
    });
    EXPECT_EQ(first_difference(data, expected_reduction(STRATA_F32, STRATA_SUM, world(), 100),
                               STRATA_F32),
              "");
    run(mode, self,
        [&](strata_request* req, strata_error* e) { return ops().barrier(self, req, e); });
  }
  ops().destroy(self);
}

}  // namespace
}  // namespace strata::test::comm
