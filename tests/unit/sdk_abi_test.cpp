// The SDK's wrappers read only what a table's size says it holds: sdk::Comm checks each member of
// the comm table against its header's struct_size, sdk::Host needs the host table's 1.0 fields.
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
  api.struct_size = offsetof(strata_host_api, precision_self) + sizeof(void*);
  EXPECT_NO_THROW(strata::sdk::Host{&api});
}

}  // namespace
