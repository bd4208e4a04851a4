// Several non-blocking collectives in flight at once, completed in another order than started.
#include "comm_env.hpp"

#include <regex>

namespace strata::test::comm {
namespace {

// Five collectives of mixed kinds in flight on `self`, waited in reverse order. On the MPI path
// the f32 scratch buffers of the two half-precision reductions are accounted while in flight; the
// shared-memory path needs none (its segment is accounted from create() to destroy()).
void many_in_flight_completed_in_reverse_order(void* self) {
  constexpr uint64_t kCount = 3001;
  strata_error err = sdk::make_error();

  Bytes reduce_in = rank_input(STRATA_F16, rank(), kCount), reduce_out(reduce_in.size());
  strata_buffer reduce_send = view(reduce_in, STRATA_F16),
                reduce_recv = view(reduce_out, STRATA_F16);
  Bytes gather_in = rank_input(STRATA_I64, rank(), kCount), gather_out(gather_in.size() * world());
  strata_buffer gather_send = view(gather_in, STRATA_I64),
                gather_recv = view(gather_out, STRATA_I64);
  Bytes scatter_in = rank_input(STRATA_BF16, rank(), kCount * world()), scatter_out(kCount * 2);
  strata_buffer scatter_send = view(scatter_in, STRATA_BF16);
  strata_buffer scatter_recv = view(scatter_out, STRATA_BF16);
  Bytes bcast = rank_input(STRATA_U8, rank(), kCount);
  strata_buffer bcast_buf = view(bcast, STRATA_U8);

  const size_t comm_bytes_before = host().bytes(STRATA_MEM_COMM_BUFFERS);
  strata_request reqs[5] = {};
  ASSERT_EQ(abi::allreduce(self, &reduce_send, &reduce_recv, STRATA_AVG, &reqs[0], &err), STRATA_OK)
      << err.message;
  ASSERT_EQ(abi::allgather(self, &gather_send, &gather_recv, &reqs[1], &err), STRATA_OK)
      << err.message;
  ASSERT_EQ(abi::reduce_scatter(self, &scatter_send, &scatter_recv, STRATA_MAX, &reqs[2], &err),
            STRATA_OK)
      << err.message;
  ASSERT_EQ(abi::broadcast(self, &bcast_buf, world() - 1, &reqs[3], &err), STRATA_OK)
      << err.message;
  ASSERT_EQ(abi::barrier(self, &reqs[4], &err), STRATA_OK) << err.message;
  if (uses_shm(self)) {
    EXPECT_EQ(host().bytes(STRATA_MEM_COMM_BUFFERS), comm_bytes_before);
  } else {
    EXPECT_GE(host().bytes(STRATA_MEM_COMM_BUFFERS),
              comm_bytes_before + 4 * kCount * (1 + world()));
  }
  for (int i = 4; i >= 0; --i) {
    EXPECT_EQ(ops().wait(self, reqs[i], &err), STRATA_OK) << "request " << i << ": " << err.message;
  }
  EXPECT_EQ(host().bytes(STRATA_MEM_COMM_BUFFERS), comm_bytes_before);

  EXPECT_EQ(
      first_difference(reduce_out, expected_reduction(STRATA_F16, STRATA_AVG, world(), kCount),
                       STRATA_F16),
      "");
  Bytes gathered;
  for (int r = 0; r < world(); ++r) {
    const Bytes block = rank_input(STRATA_I64, r, kCount);
    gathered.insert(gathered.end(), block.begin(), block.end());
  }
  EXPECT_EQ(first_difference(gather_out, gathered, STRATA_I64), "");
  EXPECT_EQ(first_difference(
                scatter_out,
                expected_reduction(STRATA_BF16, STRATA_MAX, world(), kCount, kCount * rank()),
                STRATA_BF16),
            "");
  EXPECT_EQ(first_difference(bcast, rank_input(STRATA_U8, world() - 1, kCount), STRATA_U8), "");
}

TEST(Nonblocking, ManyInFlightCompletedInReverseOrder) {
  many_in_flight_completed_in_reverse_order(chunked_instance());  // shm from 2 ranks on
}

TEST(Nonblocking, ManyInFlightCompletedInReverseOrderOverMpiOnly) {
  many_in_flight_completed_in_reverse_order(mpi_instance());
}

// With shared memory, each rank accounts its share of the segment (segment bytes / ranks, the
// size create() logs) in STRATA_MEM_COMM_BUFFERS from create() to destroy(); without, nothing.
TEST(Nonblocking, SharedMemorySegmentIsAccountedFromCreateToDestroy) {
  if (!has_shm_path()) GTEST_SKIP() << "this plugin has no shared-memory path";
  const size_t before = host().bytes(STRATA_MEM_COMM_BUFFERS);
  const size_t mark = log_mark();
  strata_error err = sdk::make_error();
  void* self = nullptr;
  ASSERT_EQ(abi::create("{}", &self, &err), STRATA_OK) << err.message;
  const size_t during = host().bytes(STRATA_MEM_COMM_BUFFERS);
  std::smatch match;
  bool found = false;
  for (const std::string& line : log_since(mark)) {
    static const std::regex segment(R"(shm on \(.* ([0-9]+) KiB segment)");
    if (std::regex_search(line, match, segment)) {
      found = true;
      const size_t segment_bytes = std::stoull(match[1].str()) * 1024;
      EXPECT_EQ(during - before, segment_bytes / static_cast<size_t>(world())) << line;
    }
  }
  EXPECT_EQ(found, world() >= 2);
  if (!found) {
    EXPECT_EQ(during, before);
  }
  ops().destroy(self);
  EXPECT_EQ(host().bytes(STRATA_MEM_COMM_BUFFERS), before);
}

TEST(Nonblocking, TestReportsDoneAndTheRequestMustStillBeWaited) {
  strata_error err = sdk::make_error();
  Bytes data = rank_input(STRATA_F32, rank(), 16);
  strata_buffer buffer = view(data, STRATA_F32);
  strata_request req = nullptr;
  ASSERT_EQ(abi::allreduce(instance(), &buffer, &buffer, STRATA_SUM, &req, &err), STRATA_OK);
  int32_t done = 0;
  while (!done) ASSERT_EQ(ops().test(instance(), req, &done, &err), STRATA_OK) << err.message;
  // Completion alone is not enough: wait() is what finishes and frees it.
  ASSERT_EQ(ops().test(instance(), req, &done, &err), STRATA_OK) << err.message;
  EXPECT_EQ(done, 1);
  ASSERT_EQ(ops().wait(instance(), req, &err), STRATA_OK) << err.message;
  EXPECT_EQ(
      first_difference(data, expected_reduction(STRATA_F32, STRATA_SUM, world(), 16), STRATA_F32),
      "");
}

TEST(Nonblocking, WaitOnAnotherInstanceIsRejected) {
  strata_error err = sdk::make_error();
  strata_request req = nullptr;
  ASSERT_EQ(abi::barrier(instance(), &req, &err), STRATA_OK) << err.message;
  EXPECT_EQ(ops().wait(chunked_instance(), req, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("not a pending request of this instance"),
            std::string::npos)
      << err.message;
  EXPECT_EQ(ops().wait(instance(), req, &err), STRATA_OK) << err.message;
}

// A blocking call issued while non-blocking work is queued must wait for it (collective order is
// the submission order on every rank), across two instances sharing the progress thread.
TEST(Nonblocking, BlockingAfterQueuedAcrossInstancesKeepsOrder) {
  strata_error err = sdk::make_error();
  for (int rep = 0; rep < 20; ++rep) {
    Bytes a = rank_input(STRATA_F32, rank(), 30001), b = rank_input(STRATA_F32, rank(), 3001);
    Bytes c = rank_input(STRATA_F32, rank(), 17);
    strata_buffer va = view(a, STRATA_F32), vb = view(b, STRATA_F32), vc = view(c, STRATA_F32);
    strata_request ra = nullptr, rb = nullptr;
    ASSERT_EQ(abi::allreduce(chunked_instance(), &va, &va, STRATA_SUM, &ra, &err), STRATA_OK);
    ASSERT_EQ(abi::allreduce(instance(), &vb, &vb, STRATA_AVG, &rb, &err), STRATA_OK);
    ASSERT_EQ(abi::allreduce(instance(), &vc, &vc, STRATA_MAX, nullptr, &err), STRATA_OK) << err.message;
    ASSERT_EQ(abi::barrier(chunked_instance(), nullptr, &err), STRATA_OK);
    int32_t done = 0;
    ASSERT_EQ(ops().test(instance(), rb, &done, &err), STRATA_OK);
    EXPECT_EQ(done, 1);  // blocking calls drained the queue
    ASSERT_EQ(ops().wait(instance(), rb, &err), STRATA_OK) << err.message;
    ASSERT_EQ(ops().wait(chunked_instance(), ra, &err), STRATA_OK) << err.message;
    EXPECT_EQ(first_difference(a, expected_reduction(STRATA_F32, STRATA_SUM, world(), 30001), STRATA_F32), "");
    EXPECT_EQ(first_difference(b, expected_reduction(STRATA_F32, STRATA_AVG, world(), 3001), STRATA_F32), "");
    EXPECT_EQ(first_difference(c, expected_reduction(STRATA_F32, STRATA_MAX, world(), 17), STRATA_F32), "");
  }
}
}  // namespace
}  // namespace strata::test::comm
