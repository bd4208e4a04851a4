// The loader's checks of an ABI 1.3+ descriptor and ops table (check_descriptor), the runtime minor
// and its emulation (STRATA_EMULATE_ABI_MINOR), the host-services table sizes, and the host
// structs' first released sizes: all on tables in memory, no plugin file needed.
#include "engine/host_structs.hpp"
#include "loader/plugin_loader.hpp"
#include "loader/runtime_abi.hpp"
#include "test_util.hpp"

#include <gmock/gmock.h>

#include <cstring>

namespace strata::rt::test {
namespace {

using ::testing::HasSubstr;

const std::string kWhere = "m.json: /sharding";
const std::string kFile = "/p/libx.so";

strata_status fake_create(const strata_plugin_create_args*, void**, strata_error*) { return STRATA_OK; }
void fake_destroy(void*) {}
strata_status fake_query(void*, strata_sharding_caps*, strata_error*) { return STRATA_OK; }
strata_status fake_register(void*, uint32_t, const strata_param_desc*, strata_error*) { return STRATA_OK; }
strata_status fake_plain(void*, strata_error*) { return STRATA_OK; }
strata_status fake_grad_ready(void*, const strata_grad_ready_args*, strata_error*) { return STRATA_OK; }
strata_status fake_owned(void*, const strata_shard**, size_t*, strata_error*) { return STRATA_OK; }
strata_status fake_define(void*, uint32_t, const char*, const uint32_t*, size_t, strata_error*) {
  return STRATA_OK;
}
strata_status fake_group(void*, const strata_group_args*, strata_error*) { return STRATA_OK; }
strata_status fake_view(void*, uint32_t, strata_param_view*, strata_error*) { return STRATA_OK; }
strata_status fake_end(void*, const strata_micro_step_args*, strata_error*) { return STRATA_OK; }

// A complete sharding table with every function set, and its descriptor.
struct Fixture {
  strata_sharding_ops ops{};
  strata_plugin_descriptor d{};

  Fixture() {
    ops.header = STRATA_OPS_HEADER(strata_sharding_ops, STRATA_PLUGIN_SHARDING);
    ops.create = fake_create;
    ops.destroy = fake_destroy;
    ops.query = fake_query;
    ops.register_param = fake_register;
    ops.finalize = fake_plain;
    ops.grad_ready = fake_grad_ready;
    ops.finish_reduce = fake_plain;
    ops.owned_shards = fake_owned;
    ops.publish = fake_plain;
    ops.zero_grad = fake_plain;
    ops.define_group = fake_define;
    ops.gather = fake_group;
    ops.release = fake_group;
    ops.param_view = fake_view;
    ops.end_micro_step = fake_end;
    d.struct_size = sizeof d;
    d.abi_major = STRATA_ABI_MAJOR;
    d.min_runtime_minor = STRATA_ABI_MINOR_TABLES;
    d.kind = STRATA_PLUGIN_SHARDING;
    d.name = "x";
    d.version = "1";
    d.ops = &ops;
  }

  std::string error() const {
    return error_of([&] { check_descriptor(&d, STRATA_PLUGIN_SHARDING, kWhere, kFile); });
  }
};

TEST(AbiCheck, CompleteTableLoads) {
  ScopedEnv env(kEmulateAbiMinorVariable, nullptr);
  Fixture f;
  EXPECT_NO_THROW(check_descriptor(&f.d, STRATA_PLUGIN_SHARDING, kWhere, kFile));
  // Without parameter groups (all five NULL) too.
  f.ops.define_group = nullptr;
  f.ops.gather = nullptr;
  f.ops.release = nullptr;
  f.ops.param_view = nullptr;
  f.ops.end_micro_step = nullptr;
  EXPECT_NO_THROW(check_descriptor(&f.d, STRATA_PLUGIN_SHARDING, kWhere, kFile));
}

TEST(AbiCheck, FloorAboveTheRuntimeIsRefused) {
  ScopedEnv env(kEmulateAbiMinorVariable, nullptr);
  Fixture f;
  f.d.min_runtime_minor = STRATA_ABI_MINOR + 1;
  EXPECT_THAT(f.error(), HasSubstr("m.json: /sharding: sharding plugin 'x' (/p/libx.so) needs runtime ABI 1." +
                                   std::to_string(STRATA_ABI_MINOR + 1) + " or later; this runtime is 1." +
                                   std::to_string(STRATA_ABI_MINOR)));
}

TEST(AbiCheck, EmulatedMinorRefusesHigherFloors) {
  ScopedEnv env(kEmulateAbiMinorVariable, "3");
  EXPECT_EQ(runtime_abi_minor(), 3u);
  Fixture f;
  f.d.min_runtime_minor = 4;
  EXPECT_THAT(f.error(), HasSubstr("needs runtime ABI 1.4 or later; this runtime is 1.3 (emulated: "
                                   "STRATA_EMULATE_ABI_MINOR=3)"));
  f.d.min_runtime_minor = 3;
  EXPECT_NO_THROW(check_descriptor(&f.d, STRATA_PLUGIN_SHARDING, kWhere, kFile));
}

TEST(AbiCheck, BadEmulationValuesNameTheVariableAndRange) {
  const std::string above = std::to_string(STRATA_ABI_MINOR + 1);
  for (const char* bad : {"2", above.c_str(), "x", "", "3x", "-1", "99999999999999999999"}) {
    ScopedEnv env(kEmulateAbiMinorVariable, bad);
    EXPECT_THAT(error_of([] { runtime_abi_minor(); }),
                HasSubstr("STRATA_EMULATE_ABI_MINOR: expected an integer from 3 to " +
                          std::to_string(STRATA_ABI_MINOR)))
        << bad;
  }
  ScopedEnv env(kEmulateAbiMinorVariable, std::to_string(STRATA_ABI_MINOR).c_str());
  EXPECT_EQ(runtime_abi_minor(), static_cast<uint32_t>(STRATA_ABI_MINOR));
}

TEST(AbiCheck, HostTableSizePerMinor) {
  EXPECT_EQ(host_api_size(STRATA_ABI_MINOR), sizeof(strata_host_api));
  EXPECT_EQ(host_api_size(3), offsetof(strata_host_api, log_enabled));
  EXPECT_EQ(host_api_size(4), offsetof(strata_host_api, trace_enabled));
}

TEST(AbiCheck, HeaderSizeBelowThe13Table) {
  ScopedEnv env(kEmulateAbiMinorVariable, nullptr);
  Fixture f;
  f.ops.header.struct_size = 64;
  EXPECT_THAT(f.error(), HasSubstr("m.json: /sharding: sharding plugin 'x' (/p/libx.so): ops table header "
                                   "says 64 bytes, smaller than ABI 1.3's " +
                                   // 1.3's table ends at end_micro_step (1.8 appended shard_ranges)
                                   std::to_string(offsetof(strata_sharding_ops, shard_ranges)) +
                                   " for a sharding table"));
}

TEST(AbiCheck, HeaderMajorKindAndMinor) {
  ScopedEnv env(kEmulateAbiMinorVariable, nullptr);
  Fixture f;
  f.ops.header.abi_major = 2;
  EXPECT_THAT(f.error(), HasSubstr("ops table header says ABI major 2"));
  f.ops.header.abi_major = 1;
  f.ops.header.kind = STRATA_PLUGIN_OFFLOAD;
  EXPECT_THAT(f.error(), HasSubstr("ops table header says it is an offload table, but the descriptor "
                                   "says a sharding table"));
  f.ops.header.kind = STRATA_PLUGIN_SHARDING;
  f.ops.header.built_minor = 2;
  EXPECT_THAT(f.error(), HasSubstr("ops table header says ABI 1.2, older than 1.3"));
}

TEST(AbiCheck, NewerHeaderIsFine) {
  ScopedEnv env(kEmulateAbiMinorVariable, nullptr);
  // A table built with a later header: larger, a later minor; only the known fields are read.
  struct Newer {
    strata_sharding_ops ops;
    void* appended;
  } newer{};
  Fixture f;
  newer.ops = f.ops;
  newer.ops.header.struct_size = sizeof(Newer);
  newer.ops.header.built_minor = STRATA_ABI_MINOR + 1;
  f.d.ops = &newer.ops;
  EXPECT_NO_THROW(check_descriptor(&f.d, STRATA_PLUGIN_SHARDING, kWhere, kFile));
}

TEST(AbiCheck, MissingRequiredFunctionIsNamed) {
  ScopedEnv env(kEmulateAbiMinorVariable, nullptr);
  Fixture f;
  f.ops.finalize = nullptr;
  EXPECT_THAT(f.error(), HasSubstr("m.json: /sharding: sharding plugin 'x' (/p/libx.so): ops table has "
                                   "no 'finalize' (required)"));
}

TEST(AbiCheck, PartialGroupSetIsRefused) {
  ScopedEnv env(kEmulateAbiMinorVariable, nullptr);
  Fixture f;
  f.ops.release = nullptr;
  f.ops.end_micro_step = nullptr;
  EXPECT_THAT(f.error(), HasSubstr("ops table has define_group, gather and param_view but no release "
                                   "and end_micro_step"));
}

TEST(AbiCheck, CommOptionalCollectivesMayBeNull) {
  ScopedEnv env(kEmulateAbiMinorVariable, nullptr);
  strata_comm_ops ops{};
  ops.header = STRATA_OPS_HEADER(strata_comm_ops, STRATA_PLUGIN_COMM);
  ops.create = fake_create;
  ops.destroy = fake_destroy;
  ops.query = [](void*, strata_comm_caps*, strata_error*) { return STRATA_OK; };
  auto coll = [](void*, const strata_coll_args*, strata_request*, strata_error*) { return STRATA_OK; };
  ops.allreduce = coll;
  ops.allgather = coll;
  ops.broadcast = coll;
  strata_plugin_descriptor d{sizeof d, STRATA_ABI_MAJOR, STRATA_ABI_MINOR, STRATA_PLUGIN_COMM, "c", "1", "", &ops};
  EXPECT_THAT(error_of([&] { check_descriptor(&d, STRATA_PLUGIN_COMM, "m: /comm", kFile); }),
              HasSubstr("comm plugin 'c' (/p/libx.so): ops table has no 'barrier' (required)"));
  ops.barrier = coll;
  EXPECT_NO_THROW(check_descriptor(&d, STRATA_PLUGIN_COMM, "m: /comm", kFile));
}

// The runtime reads a plugin's table through copy_ops: members past header.struct_size (an older
// plugin's smaller table, followed by whatever lies next in memory) read as NULL, and a newer
// plugin's larger table is read only as far as this runtime's layout goes.
TEST(AbiCheck, TableCopyReadsMembersPastTheHeaderSizeAsNull) {
  struct TableThenGarbage {
    strata_comm_ops ops;
    unsigned char after[64];
  } memory;
  std::memset(static_cast<void*>(&memory), 0xA5, sizeof memory);
  memory.ops.header = STRATA_OPS_HEADER(strata_comm_ops, STRATA_PLUGIN_COMM);
  // A table that ends before wait and test: the bytes there are not the plugin's.
  memory.ops.header.struct_size = offsetof(strata_comm_ops, wait);
  const strata_comm_ops copy = copy_ops<strata_comm_ops>(&memory.ops);
  EXPECT_EQ(copy.header.struct_size, offsetof(strata_comm_ops, wait));
  EXPECT_EQ(copy.wait, nullptr);
  EXPECT_EQ(copy.test, nullptr);
  EXPECT_NE(copy.barrier, nullptr);  // inside the table: copied as it is
  EXPECT_EQ(std::memcmp(&copy.barrier, &memory.ops.barrier, sizeof copy.barrier), 0);

  // A larger (newer) table: everything this runtime knows is copied, nothing past sizeof(Ops).
  memory.ops.header.struct_size = sizeof memory;
  const strata_comm_ops newer = copy_ops<strata_comm_ops>(&memory.ops);
  EXPECT_EQ(std::memcmp(&newer, &memory.ops, sizeof newer), 0);
}

// A table of exactly ABI 1.3's size with garbage after it in memory loads: nothing past its
// header.struct_size is read.
TEST(AbiCheck, TableOfThe13SizeFollowedByGarbageLoads) {
  ScopedEnv env(kEmulateAbiMinorVariable, nullptr);
  struct TableThenGarbage {
    strata_sharding_ops ops;
    unsigned char after[64];
  } memory;
  std::memset(static_cast<void*>(&memory), 0xA5, sizeof memory);
  Fixture f;
  memory.ops = f.ops;
  memory.ops.header.struct_size = STRATA_SHARDING_OPS_SIZE_1_3;
  f.d.ops = &memory.ops;
  EXPECT_NO_THROW(check_descriptor(&f.d, STRATA_PLUGIN_SHARDING, kWhere, kFile));
  const strata_sharding_ops copy = copy_ops<strata_sharding_ops>(&memory.ops);
  EXPECT_EQ(copy.end_micro_step, f.ops.end_micro_step);
}

TEST(HostStructs, FirstReleasedSizes) {
  EXPECT_EQ(HostStruct<strata_create_options>::first_size, sizeof(strata_create_options));
  EXPECT_EQ(HostStruct<strata_world_info>::first_size, sizeof(strata_world_info));
  EXPECT_EQ(HostStruct<strata_memory_report>::first_size, offsetof(strata_memory_report, located));
  EXPECT_EQ(HostStruct<strata_param_view>::first_size, offsetof(strata_param_view, dtype) + 4);
  EXPECT_THAT(host_struct_problem<strata_memory_report>(8, "strata_memory"),
              HasSubstr("strata_memory: strata_memory_report.struct_size 8 is smaller than " +
                        std::to_string(offsetof(strata_memory_report, located)) + ", its size in API 1.0"));
  EXPECT_EQ(host_struct_problem<strata_memory_report>(offsetof(strata_memory_report, located), "m"), "");
}

TEST(HostStructs, ReadOnlyTheGivenFields) {
  strata_create_options older{};
  std::memset(&older, 0xff, sizeof older);
  older.struct_size = offsetof(strata_create_options, overrides_json);  // pretend: no overrides yet
  const strata_create_options read = read_host_struct(older);
  EXPECT_EQ(read.overrides_json, nullptr);
  EXPECT_EQ(read.struct_size, older.struct_size);
}

}  // namespace
}  // namespace strata::rt::test
