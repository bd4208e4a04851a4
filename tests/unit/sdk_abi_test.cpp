// The SDK's wrappers read only what a table's size says it holds: sdk::Comm checks each member of
// the comm table against its header's struct_size, sdk::Host needs the host table's 1.0 fields and
// reads the 1.7 device services only where the table holds them.
#include <strata/plugin.hpp>

#include <gmock/gmock.h>

#include <cstddef>
#include <cstring>
#include <string>

namespace {

using ::testing::HasSubstr;

int calls = 0;
strata_status coll(void*, const strata_coll_args*, strata_request*, strata_error*) {
  ++calls;
  return STRATA_OK;
}
strata_status query(void*, strata_comm_caps*, strata_error*) { return STRATA_OK; }

// A comm table built with a header whose table ends before `end`, followed in memory by garbage.
struct ShortComm {
  strata_comm_ops ops;
  unsigned char after[64];

  explicit ShortComm(size_t end) {
    std::memset(static_cast<void*>(this), 0xA5, sizeof *this);
    ops.header = STRATA_OPS_HEADER(strata_comm_ops, STRATA_PLUGIN_COMM);
    ops.header.struct_size = end;
    ops.query = query;
    ops.allreduce = coll;
    ops.allgather = coll;
    ops.allgatherv = coll;
    ops.reduce_scatter = coll;
    ops.broadcast = coll;
    ops.barrier = coll;
  }
};

strata_status code_of(void (*body)(const strata::sdk::Comm&), const strata::sdk::Comm& comm,
                      std::string* message) {
  try {
    body(comm);
  } catch (const strata::sdk::Error& e) {
    *message = e.what();
    return e.code();
  }
  return STRATA_OK;
}

TEST(SdkComm, MembersPastTheHeaderSizeAreAbsent) {
  ShortComm table(offsetof(strata_comm_ops, wait));  // ends before wait and test
  const strata::sdk::Comm comm(&table.ops, nullptr);
  EXPECT_TRUE(comm.has_allgatherv());
  EXPECT_TRUE(comm.has_reduce_scatter());
  EXPECT_FALSE(comm.has_wait());
  EXPECT_FALSE(comm.has_test());
  std::string message;
  EXPECT_EQ(code_of([](const strata::sdk::Comm& c) { c.test(nullptr); }, comm, &message),
            STRATA_ERR_UNSUPPORTED);
  EXPECT_THAT(message, HasSubstr("comm test: not supported"));
  EXPECT_EQ(code_of([](const strata::sdk::Comm& c) { c.wait(nullptr); }, comm, &message),
            STRATA_ERR_UNSUPPORTED);
  calls = 0;
  comm.barrier();
  EXPECT_EQ(calls, 1);

  // A table ending before allgatherv: it and everything after are absent, even the required ones.
  ShortComm older(offsetof(strata_comm_ops, allgatherv));
  const strata::sdk::Comm old_comm(&older.ops, nullptr);
  EXPECT_FALSE(old_comm.has_allgatherv());
  EXPECT_FALSE(old_comm.has_reduce_scatter());
  EXPECT_EQ(code_of([](const strata::sdk::Comm& c) { c.barrier(); }, old_comm, &message),
            STRATA_ERR_UNSUPPORTED);
  EXPECT_THAT(message, HasSubstr("barrier: not supported"));
}

TEST(SdkHost, TableSmallerThan10IsRefused) {
  strata_host_api api{};
  api.struct_size = offsetof(strata_host_api, comm);  // ends before comm: accepted before
  try {
    strata::sdk::Host host(&api);
    FAIL() << "a host table without comm..precision_self was accepted";
  } catch (const strata::sdk::Error& e) {
    EXPECT_EQ(e.code(), STRATA_ERR_ABI);
    EXPECT_THAT(e.what(), HasSubstr("host-services table struct_size " +
                                    std::to_string(offsetof(strata_host_api, comm))));
    EXPECT_THAT(e.what(), HasSubstr("ABI 1.0"));
  }
  api.struct_size = STRATA_HOST_API_SIZE_1_0;
  EXPECT_NO_THROW(strata::sdk::Host{&api});
}

strata_device cuda_device(void*) { return strata_device{STRATA_DEVICE_CUDA, 3}; }
int stream_tag = 0;
void* the_stream(void*) { return &stream_tag; }
int32_t last_location = STRATA_MEM_HOST;
void* alloc_at(void*, size_t, size_t, int32_t, int32_t where) {
  last_location = where;
  return &stream_tag;
}

TEST(SdkHost, DeviceServicesOfA16RuntimeReadAsHost) {
  // A 1.6 table (ends with trace_span) followed by garbage where device and cuda_stream would be.
  struct {
    strata_host_api api;
    unsigned char after[64];
  } table;
  std::memset(static_cast<void*>(&table), 0xA5, sizeof table);
  table.api.struct_size = STRATA_HOST_API_SIZE_1_5;
  table.api.alloc_bytes_at = alloc_at;
  table.api.account_bytes = nullptr;
  const strata::sdk::Host host(&table.api);
  EXPECT_EQ(host.device().type, STRATA_DEVICE_HOST);
  EXPECT_FALSE(host.on_cuda());
  EXPECT_EQ(host.cuda_stream(), nullptr);
  EXPECT_FALSE(host.has_device_alloc());
  EXPECT_EQ(host.try_alloc_device(64, STRATA_MEM_OPTIMIZER_STATE), nullptr);
  try {
    host.alloc_device(64, STRATA_MEM_OPTIMIZER_STATE);
    FAIL() << "alloc_device on a 1.6 runtime returned";
  } catch (const strata::sdk::Error& e) {
    EXPECT_EQ(e.code(), STRATA_ERR_OUT_OF_MEMORY);
    EXPECT_THAT(e.what(), HasSubstr("older than ABI 1.7"));
  }
}

TEST(SdkHost, DeviceServicesOfA17RuntimeAreCalled) {
  strata_host_api api{};
  api.struct_size = sizeof(api);
  api.alloc_bytes_at = alloc_at;
  api.account_bytes = [](void*, int32_t, int32_t, int64_t) {};
  api.device = cuda_device;
  api.cuda_stream = the_stream;
  const strata::sdk::Host host(&api);
  EXPECT_EQ(host.device().type, STRATA_DEVICE_CUDA);
  EXPECT_EQ(host.device().index, 3);
  EXPECT_TRUE(host.on_cuda());
  EXPECT_EQ(host.cuda_stream(), &stream_tag);
  ASSERT_TRUE(host.has_device_alloc());
  last_location = STRATA_MEM_HOST;
  EXPECT_EQ(host.alloc_device(64, STRATA_MEM_OPTIMIZER_STATE), &stream_tag);
  EXPECT_EQ(last_location, STRATA_MEM_DEVICE);
}

}  // namespace
