// allgather, allgatherv, broadcast and barrier: every dtype x mode x count, checked against the
// blocks every rank can compute locally.
#include "comm_env.hpp"

#include <chrono>
#include <numeric>
#include <thread>

namespace strata::test::comm {
namespace {

std::string movement_label(int32_t dtype, Mode mode, uint64_t count) {
  return std::string(sdk::dtype_name(dtype)) + " " + mode_name(mode) + " count " +
         std::to_string(count);
}

Bytes concatenated_inputs(int32_t dtype, uint64_t count) {
  Bytes all;
  for (int r = 0; r < world(); ++r) {
    const Bytes block = rank_input(dtype, r, count);
    all.insert(all.end(), block.begin(), block.end());
  }
  return all;
}

void check_allgather(void* self, int32_t dtype, Mode mode, uint64_t count, bool in_place) {
  SCOPED_TRACE(movement_label(dtype, mode, count) + (in_place ? " in place" : ""));
  const size_t block = count * sdk::dtype_size(dtype);
  Bytes send = rank_input(dtype, rank(), count);
  Bytes recv(block * world(), 0xAB);
  if (in_place) std::copy(send.begin(), send.end(), recv.begin() + block * rank());
  strata_buffer send_view = view(send, dtype);
  if (in_place) send_view.data = recv.data() + block * rank();
  strata_buffer recv_view = view(recv, dtype);
  run(mode, self, [&](strata_request* req, strata_error* err) {
    return abi::allgather(self, &send_view, &recv_view, req, err);
  });
  EXPECT_EQ(first_difference(recv, concatenated_inputs(dtype, count), dtype), "");
}

// The chunked instance is two-level across hosts (tests/multinode) where the plugin has that.
TEST(Allgather, EveryDtypeModeAndCount) {
  for (void* self : {instance(), chunked_instance()})
    for (int32_t dtype : kAllDtypes)
      for (Mode mode : kModes)
        for (uint64_t count : kCounts) check_allgather(self, dtype, mode, count, false);
}

TEST(Allgather, InPlace) {
  for (void* self : {instance(), chunked_instance()})
    for (int32_t dtype : {STRATA_F16, STRATA_F64})
      for (Mode mode : kModes)
        for (uint64_t count : {7, 3001}) check_allgather(self, dtype, mode, count, true);
}

// Rank r contributes base + r elements; blocks are laid out with a gap of r + 1 elements before
// each, and the gaps must be left untouched.
void check_allgatherv(int32_t dtype, Mode mode, uint64_t base) {
  SCOPED_TRACE(movement_label(dtype, mode, base));
  const size_t size = sdk::dtype_size(dtype);
  std::vector<uint64_t> counts(world()), displs(world());
  uint64_t total = 0;
  for (int r = 0; r < world(); ++r) {
    counts[r] = base + r;
    displs[r] = total + r + 1;
    total = displs[r] + counts[r];
  }
  Bytes send = rank_input(dtype, rank(), counts[rank()]);
  Bytes recv(total * size, 0xAB);
  Bytes expected = recv;
  for (int r = 0; r < world(); ++r) {
    const Bytes block = rank_input(dtype, r, counts[r]);
    std::copy(block.begin(), block.end(), expected.begin() + displs[r] * size);
  }
  strata_buffer send_view = view(send, dtype);
  strata_buffer recv_view = view(recv, dtype);
  run(mode, instance(), [&](strata_request* req, strata_error* err) {
    return abi::allgatherv(instance(), &send_view, &recv_view, counts.data(), displs.data(), req,
                           err);
  });
  EXPECT_EQ(first_difference(recv, expected, dtype), "");
}

TEST(Allgatherv, EveryDtypeModeAndCount) {
  for (int32_t dtype : kAllDtypes)
    for (Mode mode : kModes)
      for (uint64_t count : kCounts) check_allgatherv(dtype, mode, count);
}

TEST(Allgatherv, InPlace) {
  std::vector<uint64_t> counts(world()), displs(world());
  for (int r = 0; r < world(); ++r) counts[r] = 3 + r;
  std::exclusive_scan(counts.begin(), counts.end(), displs.begin(), uint64_t{0});
  const uint64_t total = displs.back() + counts.back();
  Bytes recv(total * 4, 0xAB), expected;
  for (int r = 0; r < world(); ++r) {
    const Bytes block = rank_input(STRATA_I32, r, counts[r]);
    expected.insert(expected.end(), block.begin(), block.end());
  }
  std::copy_n(expected.begin() + displs[rank()] * 4, counts[rank()] * 4,
              recv.begin() + displs[rank()] * 4);
  strata_buffer recv_view = view(recv, STRATA_I32);
  strata_buffer send_view = recv_view;
  send_view.data = recv.data() + displs[rank()] * 4;
  send_view.count = counts[rank()];
  for (Mode mode : kModes) {
    run(mode, instance(), [&](strata_request* req, strata_error* err) {
      return abi::allgatherv(instance(), &send_view, &recv_view, counts.data(), displs.data(), req,
                             err);
    });
    EXPECT_EQ(first_difference(recv, expected, STRATA_I32), "") << mode_name(mode);
  }
}

TEST(Broadcast, EveryDtypeModeCountAndRoot) {
  for (int32_t dtype : kAllDtypes)
    for (Mode mode : kModes)
      for (uint64_t count : kCounts)
        for (int root = 0; root < world(); ++root) {
          SCOPED_TRACE(movement_label(dtype, mode, count) + " root " + std::to_string(root));
          Bytes data = rank_input(dtype, rank(), count);
          strata_buffer buffer = view(data, dtype);
          run(mode, instance(), [&](strata_request* req, strata_error* err) {
            return abi::broadcast(instance(), &buffer, root, req, err);
          });
          EXPECT_EQ(first_difference(data, rank_input(dtype, root, count), dtype), "");
        }
}

// Rank 0 arrives 100 ms late: nobody may leave the barrier before it arrived. (The ranks left the
// preceding barrier within a few milliseconds of each other.)
TEST(Barrier, NobodyLeavesBeforeTheLastArrives) {
  for (Mode mode : kModes) {
    SCOPED_TRACE(mode_name(mode));
    const auto barrier = [&](strata_request* req, strata_error* err) {
      return abi::barrier(instance(), req, err);
    };
    run(Mode::Blocking, instance(), barrier);
    const auto start = std::chrono::steady_clock::now();
    if (rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    run(mode, instance(), barrier);
    const auto waited = std::chrono::steady_clock::now() - start;
    if (world() > 1) {
      EXPECT_GE(waited, std::chrono::milliseconds(50));
    }
  }
}

}  // namespace
}  // namespace strata::test::comm
