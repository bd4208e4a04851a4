// The SDK's comm-plugin helpers that the plugins' conformance tests (which go through the C ABI)
// and half_test.cpp do not reach directly: AVG's division and the dtype/op helpers (strata/comm/reduce_ops.hpp), the scratch owner
// (strata/comm/scratch.hpp), and the allgatherv/broadcast checks (strata/comm/collective_args.hpp).
#include <gtest/gtest.h>
#include <strata/comm/collective_args.hpp>
#include <strata/comm/reduce_ops.hpp>
#include <strata/comm/scratch.hpp>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace strata::sdk::comm {
namespace {

std::string message_of(const std::function<void()>& f, strata_status* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code != nullptr) *code = e.code();
    return e.what();
  }
  return "";
}

TEST(ReduceOps, DtypeAndOpHelpers) {
  EXPECT_TRUE(is_half(STRATA_F16));
  EXPECT_TRUE(is_half(STRATA_BF16));
  EXPECT_FALSE(is_half(STRATA_F32));
  EXPECT_EQ(accumulate_dtype(STRATA_BF16), STRATA_F32);
  EXPECT_EQ(accumulate_dtype(STRATA_I64), STRATA_I64);
  EXPECT_TRUE(is_known_op(STRATA_SUM));
  EXPECT_TRUE(is_known_op(STRATA_MAX));
  EXPECT_FALSE(is_known_op(STRATA_MAX + 1));
  EXPECT_FALSE(is_known_op(-1));
  EXPECT_STREQ(op_name(STRATA_AVG), "AVG");
  EXPECT_STREQ(op_name(STRATA_MIN), "MIN");
  EXPECT_STREQ(op_name(42), "unknown-op");
}

// Bitwise one division per element, for power-of-two divisors (the reciprocal path) and others,
// across the 16-element blocks and the remainder; u8 included from 256 ranks up, where the world
// size does not fit the dtype (every quotient is 0; converting the divisor first would divide by
// 0 at 256 ranks and by the size modulo 256 beyond).
TEST(ReduceOps, DivideInPlaceEqualsOneDivisionPerElement) {
  for (int divisor : {1, 2, 3, 4, 7, 8, 128, 255, 256, 257, 1024, 100000}) {
    for (size_t count : {0u, 1u, 15u, 16u, 17u, 100u}) {
      std::vector<float> f(count);
      std::vector<double> d(count);
      std::vector<int32_t> i32(count);
      std::vector<int64_t> i64(count);
      std::vector<uint8_t> u8(count);
      for (size_t k = 0; k < count; ++k) {
        f[k] = static_cast<float>(k) * 0.37f - 5.1f;
        d[k] = static_cast<double>(k) * 1.3e-7 - 2.0;
        i32[k] = static_cast<int32_t>(k * 7919) - 300;
        i64[k] = static_cast<int64_t>(k) * -1234567891011 + 5;
        u8[k] = static_cast<uint8_t>(k * 13);
      }
      auto f2 = f;
      auto d2 = d;
      auto i32b = i32;
      auto i64b = i64;
      auto u8b = u8;
      divide_in_place(f2.data(), count, STRATA_F32, divisor);
      divide_in_place(d2.data(), count, STRATA_F64, divisor);
      divide_in_place(i32b.data(), count, STRATA_I32, divisor);
      divide_in_place(i64b.data(), count, STRATA_I64, divisor);
      divide_in_place(u8b.data(), count, STRATA_U8, divisor);
      for (size_t k = 0; k < count; ++k) {
        EXPECT_EQ(std::bit_cast<uint32_t>(f2[k]),
                  std::bit_cast<uint32_t>(f[k] / static_cast<float>(divisor)));
        EXPECT_EQ(std::bit_cast<uint64_t>(d2[k]),
                  std::bit_cast<uint64_t>(d[k] / static_cast<double>(divisor)));
        EXPECT_EQ(i32b[k], i32[k] / divisor);
        EXPECT_EQ(i64b[k], i64[k] / divisor);
        EXPECT_EQ(u8b[k], static_cast<uint8_t>(u8[k] / divisor));
      }
    }
  }
}

TEST(ReduceOps, DivideInPlaceRefusesHalves) {
  uint16_t h = 0;
  strata_status code = STRATA_OK;
  EXPECT_EQ(message_of([&] { divide_in_place(&h, 1, STRATA_F16, 2); }, &code),
            "divide_in_place: unsupported dtype f16");
  EXPECT_EQ(code, STRATA_ERR_INTERNAL);
}

// A host-services table with only the allocator, counting live allocations.
struct CountingHost {
  strata_host_api api{};
  int live = 0;
  CountingHost() {
    api.struct_size = sizeof(strata_host_api);
    api.host_ctx = this;
    api.alloc_bytes = [](void* ctx, size_t bytes, size_t alignment, int32_t) -> void* {
      ++static_cast<CountingHost*>(ctx)->live;
      return std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
    };
    api.free_bytes = [](void* ctx, void* p) {
      --static_cast<CountingHost*>(ctx)->live;
      std::free(p);
    };
  }
};

TEST(Scratch, OwnsAndMovesItsMemory) {
  CountingHost counting;
  const Host host(&counting.api);
  {
    Scratch empty;
    EXPECT_EQ(empty.data(), nullptr);
    Scratch a(host, 16 * sizeof(float));
    ASSERT_NE(a.data(), nullptr);
    EXPECT_EQ(static_cast<void*>(a.floats()), a.data());
    a.floats()[15] = 1.5f;
    EXPECT_EQ(counting.live, 1);
    Scratch b(std::move(a));
    EXPECT_EQ(a.data(), nullptr);
    EXPECT_EQ(b.floats()[15], 1.5f);
    Scratch c(host, 8);
    EXPECT_EQ(counting.live, 2);
    c = std::move(b);  // frees c's own block
    EXPECT_EQ(counting.live, 1);
    empty = Scratch(host, 4);
    EXPECT_EQ(counting.live, 2);
  }
  EXPECT_EQ(counting.live, 0);
}

// KeptScratch allocates once, lends that buffer to every call it holds, and gives a larger call a
// buffer of its own for the lease only: what is allocated between calls stays the kept block.
TEST(KeptScratch, LendsItsBufferAndAllocatesOnlyForLargerCalls) {
  CountingHost counting;
  const Host host(&counting.api);
  {
    const KeptScratch kept(host, 64);
    EXPECT_EQ(kept.bytes(), 64u);
    EXPECT_EQ(counting.live, 1);
    void* first = nullptr;
    {
      const KeptScratch::Lease lease = kept.lease(64);
      first = lease.data();
      ASSERT_NE(first, nullptr);
      static_cast<char*>(first)[63] = 7;
      EXPECT_EQ(counting.live, 1);
    }
    {
      const KeptScratch::Lease lease = kept.lease(16);
      EXPECT_EQ(lease.data(), first);
      EXPECT_EQ(static_cast<char*>(lease.data())[63], 7);  // the same pages, call after call
    }
    {
      const KeptScratch::Lease lease = kept.lease(65);
      ASSERT_NE(lease.data(), nullptr);
      EXPECT_NE(lease.data(), first);
      EXPECT_EQ(counting.live, 2);
    }
    EXPECT_EQ(counting.live, 1);
    const KeptScratch none(host, 0);  // nothing kept: every lease is its own
    EXPECT_EQ(counting.live, 1);
    {
      const KeptScratch::Lease lease = none.lease(8);
      ASSERT_NE(lease.data(), nullptr);
      EXPECT_EQ(counting.live, 2);
    }
    EXPECT_EQ(none.lease(0).data(), nullptr);
    EXPECT_EQ(counting.live, 1);
    {
      // One lease of the kept buffer at a time: a nested one is a plugin bug, said at once.
      const KeptScratch::Lease outer = kept.lease(8);
      EXPECT_EQ(message_of([&] { (void)kept.lease(8); }),
                "KeptScratch: leased again while leased");
      const KeptScratch::Lease larger = kept.lease(128);  // its own buffer: allowed
      EXPECT_NE(larger.data(), outer.data());
    }
    EXPECT_EQ(kept.lease(8).data(), first);  // released with the lease
  }
  EXPECT_EQ(counting.live, 0);
}

Buffer buffer_of(uint64_t count) {
  static float storage[8];
  return Buffer{storage, count, STRATA_F32, sizeof(float)};
}

TEST(CollectiveArgs, AllgathervAndRootChecks) {
  const uint64_t counts[] = {2, 3};
  const uint64_t displs[] = {0, 2};
  EXPECT_EQ(message_of([&] { check_counts_and_displs("allgatherv", nullptr, displs); }),
            "allgatherv: recv_counts is NULL; expected size entries");
  EXPECT_EQ(message_of([&] { check_counts_and_displs("allgatherv", counts, nullptr); }),
            "allgatherv: displs is NULL; expected size entries");
  check_counts_and_displs("allgatherv", counts, displs);
  check_block("allgatherv", buffer_of(5), counts, displs, 1);
  EXPECT_EQ(message_of([&] { check_block("allgatherv", buffer_of(4), counts, displs, 1); }),
            "allgatherv: displs[1] + recv_counts[1] (2 + 3) must not exceed recv.count (4)");
  const uint64_t huge[] = {UINT64_MAX, UINT64_MAX};
  EXPECT_EQ(message_of([&] { check_block("allgatherv", buffer_of(4), huge, displs, 0); }),
            "allgatherv: displs[0] + recv_counts[0] (0 + 18446744073709551615) must not exceed "
            "recv.count (4)");
  check_root("broadcast", 0, 1);
  strata_status code = STRATA_OK;
  EXPECT_EQ(message_of([] { check_root("broadcast", 2, 2); }, &code),
            "broadcast: root (2) must be a rank in [0, 2)");
  EXPECT_EQ(code, STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(message_of([] { check_root("broadcast", -1, 2); }),
            "broadcast: root (-1) must be a rank in [0, 2)");
}

TEST(CollectiveArgs, HostMemoryMessageNamesThePlugin) {
  float x = 0;
  strata_buffer b = host_buffer(&x, 1, STRATA_F32);
  b.device.type = STRATA_DEVICE_CUDA;
  b.device.index = 1;
  strata_status code = STRATA_OK;
  EXPECT_EQ(message_of([&] { check_buffer("allreduce", "send", &b, "my-comm"); }, &code),
            "allreduce: send is on cuda:1; my-comm moves host memory only");
  EXPECT_EQ(code, STRATA_ERR_UNSUPPORTED);
}

}  // namespace
}  // namespace strata::sdk::comm
