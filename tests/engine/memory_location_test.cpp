// Memory locations (ABI/API 1.2): pinned allocation through the host-services table really locks
// pages, disk bytes are reported by location but never as memory, the one-line summary says where
// each category lives, and a caller built against API 1.1 still gets current/peak.
#include "device/cuda_device.hpp"
#include "device/device_placement.hpp"
#include "engine/host_services.hpp"
#include "log.hpp"
#include "engine/memory_ledger.hpp"

#include <strata/plugin.hpp>
#include <strata/strata.h>

#include <plugin_harness.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

using strata::rt::HostServices;
using strata::rt::MemoryLedger;
using strata::rt::TimelineSlot;

constexpr uint64_t kMiB = 1024 * 1024;

// A plugin-visible table over `ledger`, as the engine lends one to each plugin.
struct Table {
  MemoryLedger ledger;
  TimelineSlot no_timeline{nullptr};
  HostServices services{ledger, no_timeline};
  const strata_host_api* api = services.make_table("test plugin", nullptr, nullptr, nullptr, nullptr);

  void* alloc_at(size_t bytes, strata_mem_category c, strata_mem_location l) {
    return api->alloc_bytes_at(api->host_ctx, bytes, 64, c, l);
  }
  void free(void* p) { api->free_bytes(api->host_ctx, p); }
  void account(strata_mem_category c, strata_mem_location l, int64_t delta) {
    api->account_bytes(api->host_ctx, c, l, delta);
  }
};

// ABI 1.4: log_enabled, and the minor the table reports (STRATA_EMULATE_ABI_MINOR cuts it to an
// older minor's size, so the later services are absent).
TEST(HostServicesTable, ReportsTheRuntimeMinorAndLogEnabled) {
  unsetenv("STRATA_EMULATE_ABI_MINOR");
  Table t;
  EXPECT_EQ(t.api->struct_size, sizeof(strata_host_api));
  ASSERT_TRUE(STRATA_STRUCT_HAS(t.api, strata_host_api, log_enabled));
  ASSERT_NE(t.api->log_enabled, nullptr);
  // The runtime logger's own answer, level by level.
  for (int32_t level = STRATA_LOG_TRACE; level <= STRATA_LOG_ERROR; ++level) {
    EXPECT_EQ(t.api->log_enabled(t.api->host_ctx, level),
              strata::rt::logger().should_log(static_cast<spdlog::level::level_enum>(level)) ? 1 : 0)
        << level;
  }
  EXPECT_TRUE(strata::sdk::Host(t.api).log_enabled(STRATA_LOG_WARN));
}

TEST(HostServicesTable, EmulatedMinorHasThatMinorsSize) {
  setenv("STRATA_EMULATE_ABI_MINOR", "3", 1);
  Table t;
  unsetenv("STRATA_EMULATE_ABI_MINOR");
  EXPECT_EQ(t.api->runtime_minor, 3u);
  EXPECT_EQ(t.api->struct_size, offsetof(strata_host_api, log_enabled));
  EXPECT_FALSE(STRATA_STRUCT_HAS(t.api, strata_host_api, log_enabled));
  EXPECT_TRUE(strata::sdk::Host(t.api).has_locations());
  // The SDK answers "yes" without the service, as under a 1.3 runtime.
  EXPECT_TRUE(strata::sdk::Host(t.api).log_enabled(STRATA_LOG_TRACE));
}

// This process's locked memory in KiB (VmLck in /proc/self/status), or -1 if the kernel omits it.
long locked_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmLck:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

TEST(MemoryLocation, TheHostTableOffersTheNewEntries) {
  Table t;
  EXPECT_EQ(t.api->runtime_minor, static_cast<uint32_t>(STRATA_ABI_MINOR));
  EXPECT_TRUE(STRATA_STRUCT_HAS(t.api, strata_host_api, account_bytes));
  EXPECT_TRUE(strata::sdk::Host(t.api).has_locations());
  // A 1.1-sized table has neither entry: the SDK must not call past its end.
  strata_host_api older = *t.api;
  older.struct_size = offsetof(strata_host_api, alloc_bytes_at);
  EXPECT_FALSE(strata::sdk::Host(&older).has_locations());
  EXPECT_EQ(strata::sdk::Host(&older).try_alloc_pinned(4096, STRATA_MEM_OTHER), nullptr);
}

TEST(MemoryLocation, PinnedAllocationIsCountedAsPinnedMemory) {
  Table t;
  void* p = t.alloc_at(1000, STRATA_MEM_OPTIMIZER_STATE, STRATA_MEM_HOST_PINNED);
  if (p == nullptr) GTEST_SKIP() << "mlock refused on this system: " << std::strerror(errno);
  // Whole pages, so that unlocking one block never unlocks a neighbour's page.
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)), 0u);
  std::memset(p, 1, 1000);
  void* h = t.alloc_at(24, STRATA_MEM_OPTIMIZER_STATE, STRATA_MEM_HOST);
  ASSERT_NE(h, nullptr);

  strata_memory_report r = t.ledger.report();
  EXPECT_EQ(r.located[STRATA_MEM_HOST_PINNED][STRATA_MEM_OPTIMIZER_STATE], 1000u);
  EXPECT_EQ(r.located[STRATA_MEM_HOST][STRATA_MEM_OPTIMIZER_STATE], 24u);
  EXPECT_EQ(r.current[STRATA_MEM_OPTIMIZER_STATE], 1024u);  // memory: host and pinned together
  EXPECT_EQ(r.located[STRATA_MEM_HOST_PINNED][STRATA_MEM_OTHER], 0u);

  t.free(p);
  t.free(h);
  r = t.ledger.report();
  EXPECT_EQ(r.located[STRATA_MEM_HOST_PINNED][STRATA_MEM_OPTIMIZER_STATE], 0u);
  EXPECT_EQ(r.current[STRATA_MEM_OPTIMIZER_STATE], 0u);
  EXPECT_EQ(r.peak[STRATA_MEM_OPTIMIZER_STATE], 1024u);
}

// AddressSanitizer and ThreadSanitizer replace mlock/munlock with calls that do nothing.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerFakesMlock = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitizerFakesMlock = true;
#else
constexpr bool kSanitizerFakesMlock = false;
#endif
#else
constexpr bool kSanitizerFakesMlock = false;
#endif

TEST(MemoryLocation, PinnedPagesAreLockedUntilFreed) {
  if (kSanitizerFakesMlock) GTEST_SKIP() << "the sanitizer turns mlock into a no-op";
  const long before = locked_kib();
  if (before < 0) GTEST_SKIP() << "/proc/self/status has no VmLck line";
  Table t;
  void* p = t.alloc_at(kMiB, STRATA_MEM_OPTIMIZER_STATE, STRATA_MEM_HOST_PINNED);
  if (p == nullptr) GTEST_SKIP() << "mlock of 1 MiB refused on this system: " << std::strerror(errno);
  EXPECT_GE(locked_kib(), before + 1024) << "the pinned allocation is not page-locked";
  // A small block lives in the heap, which keeps its pages after free(): only munlock unlocks
  // them (a 1 MiB block is unmapped by free() whether or not it was unlocked).
  void* small = t.alloc_at(16 * 1024, STRATA_MEM_OPTIMIZER_STATE, STRATA_MEM_HOST_PINNED);
  ASSERT_NE(small, nullptr) << std::strerror(errno);
  EXPECT_GE(locked_kib(), before + 1024 + 16);
  t.free(small);
  t.free(p);
  EXPECT_EQ(locked_kib(), before) << "free_bytes left the pages locked";
}

long status_kib(const char* field) {
  std::ifstream status("/proc/self/status");
  const std::string prefix = std::string(field) + ":";
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(prefix, 0) == 0) return std::stol(line.substr(prefix.size()));
  }
  return -1;
}

// ZeRO stage 3 allocates and frees a gathered layer per call: a freed large block must leave the
// process, not stay in the C library's heap (glibc's dynamic mmap threshold would keep the second
// one of a size in the heap, in the RSS, after free).
TEST(MemoryLocation, LargeHostBlocksLeaveTheProcessWhenFreed) {
  if (kSanitizerFakesMlock) GTEST_SKIP() << "under a sanitizer large blocks stay on the heap";
  if (status_kib("VmRSS") < 0) GTEST_SKIP() << "/proc/self/status has no VmRSS line";
  Table t;
  // 8 MiB: above glibc's initial mmap threshold and below the 32 MiB it can rise to. The first
  // round would be mapped by glibc too; the second would come from the heap and stay there.
  constexpr uint64_t kBlock = 8 * kMiB;
  for (int round = 0; round < 3; ++round) {
    const long before = status_kib("VmRSS");
    void* p = t.alloc_at(kBlock, STRATA_MEM_PARAMS, STRATA_MEM_HOST);
    ASSERT_NE(p, nullptr) << std::strerror(errno);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    std::memset(p, 1, kBlock);
    EXPECT_GE(status_kib("VmRSS"), before + 7 * 1024) << "round " << round;
    t.free(p);
    EXPECT_LE(status_kib("VmRSS"), before + 1024)
        << "round " << round << ": the freed 8 MiB block stayed in the process";
  }
}

TEST(MemoryLocation, DiskBytesAreLocatedButAreNotMemory) {
  Table t;
  t.account(STRATA_MEM_OPTIMIZER_STATE, STRATA_MEM_DISK, 96 * kMiB);
  strata_memory_report r = t.ledger.report();
  EXPECT_EQ(r.located[STRATA_MEM_DISK][STRATA_MEM_OPTIMIZER_STATE], 96 * kMiB);
  EXPECT_EQ(r.current[STRATA_MEM_OPTIMIZER_STATE], 0u);
  EXPECT_EQ(r.peak[STRATA_MEM_OPTIMIZER_STATE], 0u);
  EXPECT_NE(t.ledger.summary().find("optimizer_state=0 B + 96.0 MiB on disk"), std::string::npos)
      << t.ledger.summary();

  t.account(STRATA_MEM_OPTIMIZER_STATE, STRATA_MEM_DISK, -static_cast<int64_t>(32 * kMiB));
  EXPECT_EQ(t.ledger.report().located[STRATA_MEM_DISK][STRATA_MEM_OPTIMIZER_STATE], 64 * kMiB);
  t.account(STRATA_MEM_OPTIMIZER_STATE, STRATA_MEM_DISK, -static_cast<int64_t>(64 * kMiB));
  r = t.ledger.report();
  EXPECT_EQ(r.located[STRATA_MEM_DISK][STRATA_MEM_OPTIMIZER_STATE], 0u);
  EXPECT_EQ(t.ledger.summary().find("disk"), std::string::npos) << t.ledger.summary();
}

TEST(MemoryLocation, AccountedDeviceBytesAreMemory) {
  Table t;
  t.account(STRATA_MEM_PARAMS, STRATA_MEM_DEVICE, 4096);
  const strata_memory_report r = t.ledger.report();
  EXPECT_EQ(r.located[STRATA_MEM_DEVICE][STRATA_MEM_PARAMS], 4096u);
  EXPECT_EQ(r.current[STRATA_MEM_PARAMS], 4096u);
  EXPECT_EQ(r.peak[STRATA_MEM_PARAMS], 4096u);
}

// ABI 1.7: the job's device and the host's stream, as finalize and strata_set_stream set them.
TEST(HostServicesTable, DeviceAndStreamOf17) {
  unsetenv("STRATA_EMULATE_ABI_MINOR");
  Table t;
  ASSERT_TRUE(STRATA_STRUCT_HAS(t.api, strata_host_api, cuda_stream));
  ASSERT_NE(t.api->device, nullptr);
  ASSERT_NE(t.api->cuda_stream, nullptr);
  EXPECT_EQ(t.api->device(t.api->host_ctx).type, STRATA_DEVICE_HOST);  // before finalize
  EXPECT_EQ(t.api->cuda_stream(t.api->host_ctx), nullptr);             // the legacy stream
  t.services.set_device(strata_device{STRATA_DEVICE_CUDA, 2});
  int stream_tag = 0;
  t.services.set_stream(&stream_tag);
  const strata_device d = t.api->device(t.api->host_ctx);
  EXPECT_EQ(d.type, STRATA_DEVICE_CUDA);
  EXPECT_EQ(d.index, 2);
  EXPECT_EQ(t.api->cuda_stream(t.api->host_ctx), &stream_tag);

  setenv("STRATA_EMULATE_ABI_MINOR", "6", 1);
  Table older;
  unsetenv("STRATA_EMULATE_ABI_MINOR");
  EXPECT_FALSE(STRATA_STRUCT_HAS(older.api, strata_host_api, device));
  // A 1.6 runtime had no device memory to give.
  older.services.set_device(strata_device{STRATA_DEVICE_CUDA, 0});
  EXPECT_EQ(older.alloc_at(64, STRATA_MEM_OTHER, STRATA_MEM_DEVICE), nullptr);
}

// Registered CUDA parameters and gradients are counted where they are (record_host_buffers records
// them at memory_location(param.device)).
TEST(MemoryLocation, DeviceParamsAreCountedAsDeviceMemory) {
  Table t;
  const strata_mem_location where = strata::rt::memory_location({STRATA_DEVICE_CUDA, 0});
  t.ledger.record(STRATA_MEM_PARAMS, 3 * kMiB, where);
  t.ledger.record(STRATA_MEM_GRADS, 3 * kMiB, where);
  const strata_memory_report r = t.ledger.report();
  EXPECT_EQ(r.located[STRATA_MEM_DEVICE][STRATA_MEM_PARAMS], 3 * kMiB);
  EXPECT_EQ(r.located[STRATA_MEM_DEVICE][STRATA_MEM_GRADS], 3 * kMiB);
  EXPECT_EQ(r.located[STRATA_MEM_HOST][STRATA_MEM_PARAMS], 0u);
  EXPECT_EQ(r.current[STRATA_MEM_PARAMS], 3 * kMiB);
  EXPECT_NE(t.ledger.summary().find("params=3.0 MiB device"), std::string::npos)
      << t.ledger.summary();
}

// alloc_bytes_at(STRATA_MEM_DEVICE) on a job whose parameters are on cuda:0: cudaMalloc counted at
// DEVICE and returned by free_bytes, where a device exists; NULL with nothing counted otherwise.
TEST(MemoryLocation, DeviceAllocationIsCountedAtDevice) {
  Table t;
  t.services.set_device(strata_device{STRATA_DEVICE_CUDA, 0});
  void* p = t.alloc_at(kMiB, STRATA_MEM_OPTIMIZER_STATE, STRATA_MEM_DEVICE);
  if (p == nullptr) {
    EXPECT_EQ(t.ledger.report().current[STRATA_MEM_OPTIMIZER_STATE], 0u);
    if (!strata::rt::cuda::built_with_cuda()) return;  // the answer of a build without CUDA
    GTEST_SKIP() << "no CUDA device here: cudaMalloc on cuda:0 failed (checked: nothing counted)";
  }
  EXPECT_EQ(t.ledger.report().located[STRATA_MEM_DEVICE][STRATA_MEM_OPTIMIZER_STATE], kMiB);
  t.free(p);
  EXPECT_EQ(t.ledger.report().current[STRATA_MEM_OPTIMIZER_STATE], 0u);
}

TEST(MemoryLocation, MisuseIsRefusedAndChangesNothing) {
  Table t;
  EXPECT_EQ(t.alloc_at(64, STRATA_MEM_OTHER, STRATA_MEM_DEVICE), nullptr);
  EXPECT_EQ(t.alloc_at(64, STRATA_MEM_OTHER, STRATA_MEM_DISK), nullptr);
  EXPECT_EQ(t.api->alloc_bytes_at(t.api->host_ctx, 64, 64, STRATA_MEM_OTHER, 7), nullptr);
  EXPECT_EQ(t.api->alloc_bytes_at(t.api->host_ctx, 64, 64, 9, STRATA_MEM_HOST), nullptr);
  t.api->account_bytes(t.api->host_ctx, STRATA_MEM_OTHER, -1, 100);
  t.api->account_bytes(t.api->host_ctx, STRATA_MEM_CATEGORY_COUNT, STRATA_MEM_DISK, 100);
  // Giving back more than was accounted stops at zero instead of wrapping to 16 EiB.
  t.account(STRATA_MEM_OTHER, STRATA_MEM_DISK, 10);
  t.account(STRATA_MEM_OTHER, STRATA_MEM_DISK, -20);
  const strata_memory_report r = t.ledger.report();
  for (int l = 0; l < STRATA_MEM_LOCATION_COUNT; ++l) {
    for (int c = 0; c < STRATA_MEM_CATEGORY_COUNT; ++c) {
      EXPECT_EQ(r.located[l][c], 0u) << "location " << l << " category " << c;
    }
  }
}

TEST(MemoryLocation, SummarySaysWhereEachCategoryLives) {
  MemoryLedger ledger;
  ledger.record(STRATA_MEM_PARAMS, 4096);
  ledger.record(STRATA_MEM_GRADS, 4096);
  // The plain host case reads as it did before locations existed.
  EXPECT_EQ(ledger.summary(),
            "params=4.0 KiB grads=4.0 KiB master=0 B optimizer_state=0 B comm_buffers=0 B other=0 B");

  ledger.record(STRATA_MEM_OPTIMIZER_STATE, 3 * kMiB / 2, STRATA_MEM_HOST_PINNED);
  ledger.account(STRATA_MEM_OPTIMIZER_STATE, STRATA_MEM_DISK, 96 * kMiB);
  ledger.record(STRATA_MEM_MASTER, kMiB, STRATA_MEM_HOST);
  ledger.record(STRATA_MEM_MASTER, kMiB, STRATA_MEM_DEVICE);
  EXPECT_EQ(ledger.summary(),
            "params=4.0 KiB grads=4.0 KiB master=2.0 MiB (1.0 MiB device) "
            "optimizer_state=1.5 MiB pinned + 96.0 MiB on disk comm_buffers=0 B other=0 B");
}

// The whole path through the host C API: an API 1.2 caller sees where the model state lives; an
// API 1.1 caller's shorter struct is filled up to its end and not a byte further.
struct Runtime {
  strata_runtime* rt = nullptr;
  strata_error err{sizeof(strata_error), 0, {}};
  std::vector<float> w = std::vector<float>(1000), gw = std::vector<float>(1000);
  Runtime() {
    const std::string json = R"({"train_micro_batch_size_per_gpu": 1,
                                  "optimizer": {"type": "Adam", "params": {"lr": 0.001}}})";
    strata_create_options options{};
    options.struct_size = sizeof(options);
    options.manifest_json = json.c_str();
    if (strata_create(&options, &rt, &err) != STRATA_OK) ADD_FAILURE() << err.message;
    strata_param_desc d{sizeof(d), "w", STRATA_F32, {STRATA_DEVICE_HOST, 0}, w.size(), w.data(),
                        gw.data()};
    uint32_t index = 0;
    EXPECT_EQ(strata_register_param(rt, &d, &index, &err), STRATA_OK) << err.message;
    EXPECT_EQ(strata_finalize(rt, &err), STRATA_OK) << err.message;
  }
  ~Runtime() { strata_destroy(rt); }
};

TEST(MemoryLocation, ReportThroughTheCApiLocatesTheModelState) {
  Runtime r;
  strata_memory_report m{};
  m.struct_size = sizeof(m);
  ASSERT_EQ(strata_memory(r.rt, &m), STRATA_OK);
  EXPECT_EQ(m.struct_size, sizeof(m));
  EXPECT_EQ(m.current[STRATA_MEM_PARAMS], 4000u);
  for (int c = 0; c < STRATA_MEM_CATEGORY_COUNT; ++c) {
    uint64_t memory = 0;
    for (int l : {STRATA_MEM_HOST, STRATA_MEM_HOST_PINNED, STRATA_MEM_DEVICE}) memory += m.located[l][c];
    EXPECT_EQ(memory, m.current[c]) << "category " << c;
  }
  EXPECT_EQ(m.located[STRATA_MEM_HOST][STRATA_MEM_PARAMS], 4000u);
  EXPECT_EQ(m.located[STRATA_MEM_HOST][STRATA_MEM_OPTIMIZER_STATE], 8000u);  // Adam: m and v
}

TEST(MemoryLocation, AnApi11CallerStillGetsCurrentAndPeak) {
  Runtime r;
  constexpr size_t kApi11Size = offsetof(strata_memory_report, located);
  strata_memory_report m;
  std::memset(&m, 0xAB, sizeof(m));  // what lies past an older caller's struct must stay as it was
  m.struct_size = kApi11Size;
  ASSERT_EQ(strata_memory(r.rt, &m), STRATA_OK);
  EXPECT_EQ(m.struct_size, kApi11Size);
  EXPECT_EQ(m.current[STRATA_MEM_PARAMS], 4000u);
  EXPECT_EQ(m.peak[STRATA_MEM_PARAMS], 4000u);
  EXPECT_EQ(m.current[STRATA_MEM_OPTIMIZER_STATE], 8000u);
  const auto* tail = reinterpret_cast<const unsigned char*>(&m) + kApi11Size;
  for (size_t i = 0; i < sizeof(m) - kApi11Size; ++i) ASSERT_EQ(tail[i], 0xAB) << "byte " << i;
}

TEST(MemoryLocation, FakeHostPlacesAndAccountsLikeTheRuntime) {
  strata::test::FakeHost host;
  const strata::sdk::Host h(host.api());
  ASSERT_TRUE(h.has_locations());
  h.account(STRATA_MEM_OPTIMIZER_STATE, STRATA_MEM_DISK, 1 << 20);
  EXPECT_EQ(host.located(STRATA_MEM_DISK, STRATA_MEM_OPTIMIZER_STATE), 1u << 20);
  EXPECT_EQ(host.bytes(STRATA_MEM_OPTIMIZER_STATE), 0u);  // disk is not memory
  h.account(STRATA_MEM_OPTIMIZER_STATE, STRATA_MEM_DISK, -(1 << 20));
  void* p = h.try_alloc_pinned(5000, STRATA_MEM_OPTIMIZER_STATE);
  if (p == nullptr) GTEST_SKIP() << "mlock refused on this system: " << std::strerror(errno);
  EXPECT_EQ(host.located(STRATA_MEM_HOST_PINNED, STRATA_MEM_OPTIMIZER_STATE), 5000u);
  EXPECT_EQ(host.bytes(STRATA_MEM_OPTIMIZER_STATE), 5000u);
  h.free(p);
  EXPECT_EQ(host.bytes(STRATA_MEM_OPTIMIZER_STATE), 0u);
}

}  // namespace
