// The runtime's host-buffer collectives over a comm stratum that moves CUDA memory only
// (Collectives::stage_host_buffers): in a world of one they are the identity on the host and never
// reach the comm plugin, which could not take host buffers. (Two ranks stage through a device
// buffer: that path needs a GPU and runs in the device jobs.)
#include "engine/collectives.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace {

int calls = 0;
strata_status counted(void*, const strata_coll_args*, strata_request*, strata_error*) {
  ++calls;
  return STRATA_OK;
}

strata_comm_ops counting_ops() {
  strata_comm_ops ops{};
  ops.header = STRATA_OPS_HEADER(strata_comm_ops, STRATA_PLUGIN_COMM);
  ops.allreduce = ops.allgather = ops.broadcast = ops.barrier = counted;
  return ops;
}

TEST(StagedCollectives, AWorldOfOneStaysOnTheHost) {
  const strata_comm_ops ops = counting_ops();
  int self = 0;
  strata::rt::Collectives c(ops, &self, "comm plugin 'cuda-only'", 1);
  c.stage_host_buffers([] { return static_cast<void*>(nullptr); }, 0);
  calls = 0;
  const double local[2] = {1.0, 2.5};
  double global[2] = {0.0, 0.0};
  c.allreduce(local, global, 2, STRATA_F64, STRATA_SUM);
  EXPECT_EQ(global[0], 1.0);
  EXPECT_EQ(global[1], 2.5);
  const int64_t mine = 42;
  int64_t all = 0;
  c.allgather(&mine, &all, 1, STRATA_I64);
  EXPECT_EQ(all, 42);
  EXPECT_EQ(c.allgather_strings("rank 0's text"), std::vector<std::string>{"rank 0's text"});
  float values[3] = {1, 2, 3};
  c.broadcast(values, 3, STRATA_F32, 0);
  EXPECT_EQ(values[2], 3.0f);
  EXPECT_EQ(calls, 0) << "a host buffer reached the CUDA-only comm plugin";
  c.barrier();  // no buffers: the comm plugin's own
  EXPECT_EQ(calls, 1);
}

TEST(StagedCollectives, WithoutStagingTheCommPluginMovesThem) {
  const strata_comm_ops ops = counting_ops();
  int self = 0;
  strata::rt::Collectives c(ops, &self, "comm plugin 'host'", 1);
  calls = 0;
  double x = 1.0, y = 0.0;
  c.allreduce(&x, &y, 1, STRATA_F64, STRATA_SUM);
  EXPECT_EQ(calls, 1);
}

}  // namespace
