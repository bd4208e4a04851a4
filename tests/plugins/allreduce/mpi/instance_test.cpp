// Descriptor, capabilities and config validation.
#include "comm_env.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace strata::test::comm {
namespace {

TEST(Descriptor, IsACommPluginOfThisAbi) {
  EXPECT_EQ(descriptor().kind, STRATA_PLUGIN_COMM);
  EXPECT_EQ(descriptor().abi_major, uint32_t{STRATA_ABI_MAJOR});
  EXPECT_EQ(ops().header.struct_size, sizeof(strata_comm_ops));
  EXPECT_STREQ(descriptor().name, "allreduce-mpi");
}

// ABI 1.3: the table starts with a header that agrees with the descriptor, and the descriptor's
// minor is a floor no lower than the first minor with that layout.
TEST(Descriptor, OpsTableStartsWithItsHeader) {
  EXPECT_EQ(descriptor().struct_size, sizeof(strata_plugin_descriptor));
  EXPECT_EQ(descriptor().ops, static_cast<const void*>(&ops()));
  EXPECT_GE(descriptor().min_runtime_minor, uint32_t{STRATA_ABI_MINOR_TABLES});
  EXPECT_LE(descriptor().min_runtime_minor, uint32_t{STRATA_ABI_MINOR});
  EXPECT_EQ(ops().header.abi_major, uint32_t{STRATA_ABI_MAJOR});
  EXPECT_EQ(ops().header.built_minor, uint32_t{STRATA_ABI_MINOR});
  EXPECT_EQ(ops().header.kind, STRATA_PLUGIN_COMM);
  EXPECT_EQ(ops().header.reserved, 0u);
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
  // mpirun says where each rank runs: every rank on this machine in tests/plugins/allreduce, two hosts in
  // tests/multinode.
  const char* env_local_rank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  const char* env_local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  EXPECT_EQ(caps.local_rank, env_local_rank ? std::atoi(env_local_rank) : caps.rank);
  EXPECT_EQ(caps.local_size, env_local_size ? std::atoi(env_local_size) : caps.size);
  EXPECT_EQ(caps.dtype_mask, (1u << STRATA_DTYPE_COUNT) - 1);
  EXPECT_EQ(caps.collective_mask, 0x7fu);  // the six of ABI 1.0 and alltoallv (1.10)
  EXPECT_EQ(caps.features, STRATA_COMM_FEATURE_SPLIT);
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

// A caller built against an older (1.0) header hands in a caps of 1.0's size: the plugin fills the
// fields inside that size and not a byte after it. A caller built against a newer header (a larger
// caps) gets the fields this plugin knows, and its later bytes are left alone. (strata_comm_caps
// has not grown since 1.0, so today both sizes are equal; the canary guards the day it grows.)
constexpr size_t kCapsSize_1_0 = STRATA_COMM_CAPS_SIZE_1_0;

void expect_caps_filled_within(size_t struct_size) {
  SCOPED_TRACE("caps struct_size " + std::to_string(struct_size));
  constexpr unsigned char kCanary = 0xA5;
  alignas(strata_comm_caps) unsigned char storage[sizeof(strata_comm_caps) + 64];
  std::memset(storage, kCanary, sizeof storage);
  auto* caps = reinterpret_cast<strata_comm_caps*>(storage);
  caps->struct_size = struct_size;
  strata_error err = sdk::make_error();
  ASSERT_EQ(ops().query(instance(), caps, &err), STRATA_OK) << err.message;
  EXPECT_EQ(caps->struct_size, struct_size) << "struct_size is the caller's, not the plugin's";
  EXPECT_EQ(caps->rank, rank());
  EXPECT_EQ(caps->size, world());
  EXPECT_EQ(caps->dtype_mask, (1u << STRATA_DTYPE_COUNT) - 1);
  EXPECT_EQ(caps->collective_mask, 0x7fu);
  EXPECT_EQ(caps->nonblocking, 1);
  if (STRATA_STRUCT_HAS(caps, strata_comm_caps, features)) {
    EXPECT_EQ(caps->features, STRATA_COMM_FEATURE_SPLIT);
  }
  const size_t filled = std::min(struct_size, sizeof(strata_comm_caps));
  for (size_t i = filled; i < sizeof storage; ++i) {
    ASSERT_EQ(storage[i], kCanary) << "byte " << i << " is past the " << filled << " it may fill";
  }
}

TEST(Caps, OlderSmallerStructIsFilledOnlyWithinItsSize) {
  expect_caps_filled_within(kCapsSize_1_0);
}

TEST(Caps, NewerLargerStructKeepsTheBytesThePluginDoesNotKnow) {
  expect_caps_filled_within(sizeof(strata_comm_caps) + 32);
}

TEST(Caps, SmallerThanAbi10IsAnAbiErrorNamingTheSize) {
  strata_comm_caps caps{};
  caps.struct_size = kCapsSize_1_0 - sizeof(int32_t);
  caps.nonblocking = 7;
  strata_error err = sdk::make_error();
  EXPECT_EQ(ops().query(instance(), &caps, &err), STRATA_ERR_ABI);
  const std::string mentions = "caps->struct_size (" + std::to_string(caps.struct_size) + ")";
  EXPECT_NE(std::string(err.message).find(mentions), std::string::npos) << err.message;
  EXPECT_EQ(caps.nonblocking, 7) << "a refused caps is not written";
}

// create() takes a strata_plugin_create_args (ABI 1.3): NULL, or one too small to hold config_json
// and host, is refused with a message and no instance.
TEST(Create, NullOrTooSmallArgsAreRefused) {
  strata_error err = sdk::make_error();
  void* self = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(ops().create(nullptr, &self, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(self, nullptr);
  EXPECT_NE(std::string(err.message).find("args is NULL"), std::string::npos) << err.message;

  strata_plugin_create_args args{};
  args.struct_size = offsetof(strata_plugin_create_args, host);  // no room for host
  args.config_json = "{}";
  args.host = host().api();
  self = reinterpret_cast<void*>(0x1);
  err = sdk::make_error();
  EXPECT_EQ(ops().create(&args, &self, &err), STRATA_ERR_ABI);
  EXPECT_EQ(self, nullptr);
  EXPECT_NE(std::string(err.message).find("struct_size " + std::to_string(args.struct_size)),
            std::string::npos)
      << err.message;
}

void expect_config_rejected(const char* config, const std::string& mentions) {
  SCOPED_TRACE(config);
  strata_error err = sdk::make_error();
  void* self = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(abi::create(config, &self, &err), STRATA_ERR_INVALID_ARGUMENT);
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
  expect_config_rejected(R"({"shm": 1})", "shm: expected true or false, got 1");
  expect_config_rejected(R"({"shm": "on"})", "shm: expected true or false");
  expect_config_rejected(R"({"shm_chunk_bytes": 0})",
                         "shm_chunk_bytes: expected a positive integer, got 0");
  expect_config_rejected(R"({"shm_chunk_bytes": 4096.5})", "shm_chunk_bytes");
  expect_config_rejected(R"({"shm_min_bytes": -1})",
                         "shm_min_bytes: expected a non-negative integer, got -1");
  expect_config_rejected(R"({"shm_min_bytes": "64KiB"})", "shm_min_bytes");
  expect_config_rejected(R"({"hierarchical": "yes"})",
                         "hierarchical: expected true, false or \"auto\", got \"yes\"");
  expect_config_rejected(R"({"chunk_size": 4096})",
                         "chunk_size: unknown key; expected one of chunk_bytes, arrival_gate");
  expect_config_rejected(R"([1, 2])", "expected a JSON object");
  expect_config_rejected(R"({"chunk_bytes": )", "not valid JSON");
}

TEST(Config, MoreInstancesCanLiveSideBySide) {
  strata_error err = sdk::make_error();
  void* self = nullptr;
  ASSERT_EQ(abi::create(R"({"chunk_bytes": 64})", &self, &err), STRATA_OK)
      << err.message;
  Bytes data = rank_input(STRATA_I32, rank(), 100);
  strata_buffer buffer = view(data, STRATA_I32);
  run(Mode::Nonblocking, self, [&](strata_request* req, strata_error* e) {
    return abi::allreduce(self, &buffer, &buffer, STRATA_MAX, req, e);
  });
  EXPECT_EQ(
      first_difference(data, expected_reduction(STRATA_I32, STRATA_MAX, world(), 100), STRATA_I32),
      "");
  ops().destroy(self);
  ops().destroy(nullptr);  // allowed
}

// hierarchical: on when the ranks span several hosts (tests/multinode's 2 x 2 and 2 + 1), off on
// one host, as the create line says; in two levels (a shared-memory group per host) where every
// host holds the same number of ranks and shared memory is on, else through each host's first
// rank. "auto" (the default, {}) takes the two levels where they run and is flat elsewhere, the
// create line saying why. The conformance tests' chunked instance checks results at every size.
TEST(Config, HierarchicalAllreduceIsOnOnlyAcrossHosts) {
  for (const char* config :
       {R"({"hierarchical": true})", R"({"hierarchical": true, "shm": false})", "{}",
        R"({"hierarchical": "auto", "shm": false})"}) {
    SCOPED_TRACE(config);
    const bool automatic = std::string(config).find("true") == std::string::npos;
    const size_t mark = log_mark();
    strata_error err = sdk::make_error();
    void* self = nullptr;
    ASSERT_EQ(abi::create(config, &self, &err), STRATA_OK) << err.message;
    strata_comm_caps caps{};
    caps.struct_size = sizeof caps;
    ASSERT_EQ(ops().query(self, &caps, &err), STRATA_OK) << err.message;
    const bool spans = caps.local_size < caps.size;
    // Whether every host holds as many ranks as this one: the largest and smallest host agree.
    Bytes sizes(2 * sizeof(int32_t));
    const int32_t mine[2] = {caps.local_size, -caps.local_size};
    std::memcpy(sizes.data(), mine, sizeof mine);
    strata_buffer size_buffer = view(sizes, STRATA_I32);
    run(Mode::Blocking, self, [&](strata_request* req, strata_error* e) {
      return abi::allreduce(self, &size_buffer, &size_buffer, STRATA_MAX, req, e);
    });
    int32_t extremes[2];
    std::memcpy(extremes, sizes.data(), sizeof extremes);
    const bool even = extremes[0] == -extremes[1];
    const bool shm = std::string(config).find("false") == std::string::npos;
    bool on = false, off = false, two_level = false, leaders = false, auto_off = false;
    for (const std::string& line : log_since(mark)) {
      off = off || line.find(", hierarchical allreduce off (one host)") != std::string::npos;
      auto_off = auto_off || line.find(", hierarchical allreduce off (auto: ") != std::string::npos;
      on = on || (line.find(", hierarchical allreduce") != std::string::npos &&
                  line.find("hierarchical allreduce off") == std::string::npos);
      two_level = two_level ||
                  line.find(std::string("hierarchical allreduce (") + (automatic ? "auto: " : "") +
                            "two-level: within hosts shm on (") != std::string::npos;
      leaders = leaders || line.find("hierarchical allreduce (through each host's first rank") !=
                               std::string::npos;
    }
    const bool runs_two_level = spans && even && shm && caps.local_size > 1;
    EXPECT_EQ(two_level, runs_two_level);
    if (automatic) {
      EXPECT_EQ(on, runs_two_level);
      EXPECT_EQ(off, false);
      EXPECT_EQ(auto_off, spans && !runs_two_level);
      EXPECT_EQ(leaders, false);
    } else {
      EXPECT_EQ(on, spans);
      EXPECT_EQ(off, !spans);
      EXPECT_EQ(leaders, spans && !two_level);
    }
    for (uint64_t count : {uint64_t{1000}, uint64_t{1001}}) {  // 1001: a tail after the slices
      Bytes data = rank_input(STRATA_F32, rank(), count);
      strata_buffer buffer = view(data, STRATA_F32);
      run(Mode::Blocking, self, [&](strata_request* req, strata_error* e) {
        return abi::allreduce(self, &buffer, &buffer, STRATA_SUM, req, e);
      });
      EXPECT_EQ(first_difference(data, expected_reduction(STRATA_F32, STRATA_SUM, world(), count),
                                 STRATA_F32),
                "");
      expect_same_on_all_ranks(data);
    }
    ops().destroy(self);
  }
}

TEST(Config, ArrivalGateCanBeTurnedOff) {
  strata_error err = sdk::make_error();
  void* self = nullptr;
  ASSERT_EQ(abi::create(R"({"arrival_gate": false, "chunk_bytes": 64})", &self, &err), STRATA_OK)
      << err.message;
  for (Mode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    Bytes data = rank_input(STRATA_F32, rank(), 100);
    strata_buffer buffer = view(data, STRATA_F32);
    run(mode, self, [&](strata_request* req, strata_error* e) {
      return abi::allreduce(self, &buffer, &buffer, STRATA_SUM, req, e);
    });
    EXPECT_EQ(first_difference(data, expected_reduction(STRATA_F32, STRATA_SUM, world(), 100),
                               STRATA_F32),
              "");
    run(mode, self,
        [&](strata_request* req, strata_error* e) { return abi::barrier(self, req, e); });
  }
  ops().destroy(self);
}

}  // namespace
}  // namespace strata::test::comm
