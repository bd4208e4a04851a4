// PageBuffer (plugins/zero/src/page_buffer.hpp): the gradient partition's storage. In host memory
// it must read as zero, hold no pages until written, give its pages back at clear() while still
// reading zero, and stay counted under its category throughout; without account_bytes (a host
// older than ABI 1.2), and under AddressSanitizer, it falls back to the host's allocation and
// clear() writes zeros.
#include "page_buffer.hpp"

#include "plugin_harness.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>

namespace strata::zero {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kCount = 64 * kMiB / sizeof(float);

// The process's resident anonymous memory (RssAnon in /proc/self/status), in bytes.
size_t resident_anonymous() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "RssAnon:") {
      size_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 12, '\n');
  }
  ADD_FAILURE() << "no RssAnon line in /proc/self/status";
  return 0;
}

bool all_zero(const float* data, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (data[i] != 0.0f) return false;
  }
  return true;
}

void write_every_page(float* data, size_t count) {
  for (size_t i = 0; i < count; i += 1024) data[i] = static_cast<float>(i + 1);
}

TEST(PageBuffer, HoldsPagesOnlyWhileWrittenAndReadsZeroAfterClear) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "built with AddressSanitizer: PageBuffer keeps a heap block there (so that "
                  "overflows are caught), and clear() writes zeros; the plain build tests the "
                  "mapping";
#endif
  test::FakeHost fake;
  const sdk::Host host(fake.api());
  const size_t before = resident_anonymous();
  PageBuffer buffer(host, kCount, STRATA_MEM_GRADS);
  ASSERT_NE(buffer.data(), nullptr);
  EXPECT_EQ(buffer.size(), kCount);
  EXPECT_EQ(fake.bytes(STRATA_MEM_GRADS), kCount * sizeof(float));
  // Sanitizer shadow and the test's own heap may move a few MiB; the buffer is 64.
  EXPECT_LT(resident_anonymous(), before + 16 * kMiB) << "the new buffer was written to";
  EXPECT_TRUE(all_zero(buffer.data(), kCount));

  write_every_page(buffer.data(), kCount);
  const size_t written = resident_anonymous();
  EXPECT_GT(written, before + 48 * kMiB);

  buffer.clear();
  EXPECT_LT(resident_anonymous(), written - 48 * kMiB) << "clear() kept the pages";
  EXPECT_TRUE(all_zero(buffer.data(), kCount));
  EXPECT_EQ(fake.bytes(STRATA_MEM_GRADS), kCount * sizeof(float));

  write_every_page(buffer.data(), kCount);  // usable again after clear()
  EXPECT_EQ(buffer.data()[1024], 1025.0f);
  PageBuffer moved = std::move(buffer);
  EXPECT_EQ(buffer.data(), nullptr);
  EXPECT_EQ(moved.data()[1024], 1025.0f);
  moved = PageBuffer();
  EXPECT_EQ(fake.bytes(STRATA_MEM_GRADS), 0u);
}

TEST(PageBuffer, OlderHostsGetTheirOwnAllocationZeroedByClear) {
  test::FakeHost fake;
  fake.api()->account_bytes = nullptr;  // as a host older than ABI 1.2 has none
  const sdk::Host host(fake.api());
  {
    PageBuffer buffer(host, 1000, STRATA_MEM_GRADS);
    EXPECT_EQ(fake.allocations(), 1u);
    EXPECT_EQ(fake.bytes(STRATA_MEM_GRADS), 1000 * sizeof(float));
    EXPECT_TRUE(all_zero(buffer.data(), 1000));
    buffer.data()[999] = 3.0f;
    buffer.clear();
    EXPECT_TRUE(all_zero(buffer.data(), 1000));
  }
  EXPECT_EQ(fake.bytes(STRATA_MEM_GRADS), 0u);
}

TEST(PageBuffer, EmptyHasNoData) {
  test::FakeHost fake;
  PageBuffer buffer(sdk::Host(fake.api()), 0, STRATA_MEM_GRADS);
  EXPECT_EQ(buffer.data(), nullptr);
  buffer.clear();
  EXPECT_EQ(fake.bytes(STRATA_MEM_GRADS), 0u);
}

}  // namespace
}  // namespace strata::zero
