// allreduce and reduce_scatter: every dtype x op x mode x count against the exact local reference,
// on the default instance and on one that splits them into 4 KiB pieces (two levels across hosts,
// where the plugin has them).
#include "comm_env.hpp"

#include <cmath>

namespace strata::test::comm {
namespace {

std::string reduction_label(int32_t dtype, int32_t op, Mode mode, uint64_t count) {
  return std::string(sdk::dtype_name(dtype)) + " " + op_label(op) + " " + mode_name(mode) +
         " count " + std::to_string(count);
}

void check_allreduce(void* self, int32_t dtype, int32_t op, Mode mode, uint64_t count,
                     bool in_place) {
  SCOPED_TRACE(reduction_label(dtype, op, mode, count) + (in_place ? " in place" : ""));
  Bytes send = rank_input(dtype, rank(), count);
  Bytes recv(send.size(), 0xAB);
  Bytes& out = in_place ? send : recv;
  strata_buffer send_view = view(send, dtype);
  strata_buffer recv_view = view(out, dtype);
  run(mode, self, [&](strata_request* req, strata_error* err) {
    return abi::allreduce(self, &send_view, &recv_view, op, req, err);
  });
  EXPECT_EQ(first_difference(out, expected_reduction(dtype, op, world(), count), dtype), "");
}

TEST(Allreduce, EveryDtypeOpModeAndCount) {
  for (void* self : {instance(), chunked_instance()}) {
    for (int32_t dtype : kAllDtypes)
      for (int32_t op : kAllOps)
        for (Mode mode : kModes)
          for (uint64_t count : kCounts) check_allreduce(self, dtype, op, mode, count, false);
  }
}

TEST(Allreduce, InPlace) {
  for (void* self : {instance(), chunked_instance()}) {
    for (int32_t dtype : {STRATA_F32, STRATA_F16, STRATA_I64})
      for (Mode mode : kModes) check_allreduce(self, dtype, STRATA_AVG, mode, 3001, true);
  }
}

// A sum whose f16/bf16 partial sums would round away the small terms: accumulating in f32 and
// rounding once gives 2048 + (n-1) rounded, accumulating in 16 bits would give something else
// whatever the order (for 3 or more ranks).
TEST(Allreduce, HalfPrecisionAccumulatesInF32) {
  for (int32_t dtype : {STRATA_F16, STRATA_BF16}) {
    for (Mode mode : kModes) {
      SCOPED_TRACE(std::string(sdk::dtype_name(dtype)) + " " + mode_name(mode));
      const float big = dtype == STRATA_F16 ? 2048.0f : 256.0f;
      Bytes data(2 * 5);
      for (int i = 0; i < 5; ++i) put_float(dtype, data, i, rank() == 0 ? big : 1.0f);
      strata_buffer buffer = view(data, dtype);
      run(mode, instance(), [&](strata_request* req, strata_error* err) {
        return abi::allreduce(instance(), &buffer, &buffer, STRATA_SUM, req, err);
      });
      Bytes expected(data.size());
      for (int i = 0; i < 5; ++i) put_float(dtype, expected, i, big + float(world() - 1));
      EXPECT_EQ(first_difference(data, expected, dtype), "");
    }
  }
}

// Inputs that are not small integers, so rounding happens: every rank must still get the same bits.
TEST(Allreduce, BitwiseIdenticalOnAllRanksWithInexactSums) {
  for (void* self : {instance(), chunked_instance()}) {
    for (int32_t dtype : {STRATA_F32, STRATA_F16, STRATA_BF16, STRATA_F64}) {
      for (int32_t op : {STRATA_SUM, STRATA_AVG}) {
        SCOPED_TRACE(reduction_label(dtype, op, Mode::Blocking, 20000));
        Bytes data(20000 * sdk::dtype_size(dtype));
        for (uint64_t i = 0; i < 20000; ++i) {
          put_float(dtype, data, i, std::sin(float(i * 31 + rank() * 7919)) * 1000.0f / 3.0f);
        }
        strata_buffer buffer = view(data, dtype);
        run(Mode::Blocking, self, [&](strata_request* req, strata_error* err) {
          return abi::allreduce(self, &buffer, &buffer, op, req, err);
        });
        expect_same_on_all_ranks(data);
      }
    }
  }
}

void check_reduce_scatter(void* self, int32_t dtype, int32_t op, Mode mode, uint64_t count,
                          bool in_place) {
  SCOPED_TRACE(reduction_label(dtype, op, mode, count) + (in_place ? " in place" : ""));
  Bytes send = rank_input(dtype, rank(), count * world());
  Bytes recv(count * sdk::dtype_size(dtype), 0xAB);
  strata_buffer send_view = view(send, dtype);
  strata_buffer recv_view = in_place ? send_view : view(recv, dtype);
  recv_view.count = count;
  run(mode, self, [&](strata_request* req, strata_error* err) {
    return abi::reduce_scatter(self, &send_view, &recv_view, op, req, err);
  });
  if (in_place) recv.assign(send.begin(), send.begin() + recv.size());
  const Bytes expected = expected_reduction(dtype, op, world(), count, count * rank());
  EXPECT_EQ(first_difference(recv, expected, dtype), "");
}

// The chunked instance is two-level across hosts (tests/multinode) where the plugin has that.
TEST(ReduceScatter, EveryDtypeOpModeAndCount) {
  for (void* self : {instance(), chunked_instance()})
    for (int32_t dtype : kAllDtypes)
      for (int32_t op : kAllOps)
        for (Mode mode : kModes)
          for (uint64_t count : kCounts) check_reduce_scatter(self, dtype, op, mode, count, false);
}

TEST(ReduceScatter, InPlace) {
  for (void* self : {instance(), chunked_instance()})
    for (int32_t dtype : {STRATA_F32, STRATA_BF16, STRATA_I32})
      for (Mode mode : kModes)
        for (uint64_t count : {7, 3001})
          check_reduce_scatter(self, dtype, STRATA_SUM, mode, count, true);
}

}  // namespace
}  // namespace strata::test::comm
