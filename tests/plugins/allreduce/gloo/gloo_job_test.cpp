// allreduce-gloo's own multi-rank tests, run in the conformance executable's job: ranks that
// disagree on a collective over Gloo's TCP pairs all get STRATA_ERR_MISMATCH naming both calls
// (and the instance goes on working; through shared memory the group's own check does the same,
// shm_test.cpp), create() logs its one line, caps report the host grouping, and the variants equal
// the default instance bitwise on every rank.
#include "comm_env.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace strata::test::comm {
namespace {

TEST(Gloo, MismatchedCountsGiveMismatchOnEveryRank) {
  if (world() < 2) GTEST_SKIP() << "needs two ranks";
  // Over TCP (comm_backend_gloo.cpp): the ring algorithm with the ring agreement (Gloo's
  // allgather), and hierarchical with the default direct agreement where it does not take the
  // job-wide shared memory (several hosts, or STRATA_TEST_GLOO_TCP=1); across even hosts
  // (tests/multinode) that agreement runs in two levels (agreement.hpp).
  // The ranks from `first` on (or `first` alone) pass one element more: rank 1 alone (on the
  // first host), the last rank alone (on the last host), and the second half (whole hosts that
  // agree within themselves and not with the first). 10 and 11 f32 both travel in the agreement
  // frame (1 KiB of payload, agreement.hpp); 256 does and 257 does not; 300 and 301 do not.
  struct Disagreement {
    int first;
    bool alone;
  };
  std::vector<Disagreement> cases = {{1, true}};
  if (world() > 2) cases.push_back({world() - 1, true});
  if (world() > 2) cases.push_back({world() / 2, false});
  for (void* self : {mpi_instance(), chunked_instance()}) {
    if (uses_shm(self)) continue;
    for (const Disagreement& d : cases) {
      const bool differs = d.alone ? rank() == d.first : rank() >= d.first;
      for (Mode mode : kModes) {
        for (uint64_t count : {10, 256, 300}) {
          SCOPED_TRACE(std::string(mode_name(mode)) + " count " + std::to_string(count) +
                       " from rank " + std::to_string(d.first) + (d.alone ? " alone" : " on"));
          Bytes data = rank_input(STRATA_F32, rank(), count + (differs ? 1 : 0));
          strata_buffer buffer = view(data, STRATA_F32);
          strata_error err = sdk::make_error();
          strata_status status;
          if (mode == Mode::Blocking) {
            status = abi::allreduce(self, &buffer, &buffer, STRATA_SUM, nullptr, &err);
          } else {
            strata_request req = nullptr;
            ASSERT_EQ(abi::allreduce(self, &buffer, &buffer, STRATA_SUM, &req, &err), STRATA_OK);
            status = ops().wait(self, req, &err);
          }
          EXPECT_EQ(status, STRATA_ERR_MISMATCH) << err.message;
          const std::string expected = "rank 0 called allreduce SUM of " + std::to_string(count) +
                                       " f32, rank " + std::to_string(d.first) +
                                       " called allreduce SUM of " + std::to_string(count + 1) +
                                       " f32";
          EXPECT_NE(std::string(err.message).find(expected), std::string::npos) << err.message;
        }
      }
    }
    // A disagreement leaves the connections usable.
    Bytes data = rank_input(STRATA_I32, rank(), 7);
    strata_buffer buffer = view(data, STRATA_I32);
    run(Mode::Blocking, self, [&](strata_request* req, strata_error* err) {
      return abi::allreduce(self, &buffer, &buffer, STRATA_SUM, req, err);
    });
    EXPECT_EQ(first_difference(data, expected_reduction(STRATA_I32, STRATA_SUM, world(), 7),
                               STRATA_I32),
              "");
  }
}

TEST(Gloo, MismatchedBroadcastRootsAreNamed) {
  if (world() < 2) GTEST_SKIP() << "needs two ranks";
  Bytes data(8);
  strata_buffer buffer = view(data, STRATA_U8);
  strata_error err = sdk::make_error();
  EXPECT_EQ(abi::broadcast(mpi_instance(), &buffer, rank() == 0 ? 0 : 1, nullptr, &err),
            STRATA_ERR_MISMATCH);
  EXPECT_NE(std::string(err.message).find("rank 0 called broadcast of 8 u8 from root 0, rank 1 "
                                          "called broadcast of 8 u8 from root 1"),
            std::string::npos)
      << err.message;
}

// Which ranks share a host, from every rank's CROSS_RANK (strata-run sets it; the multi-host
// tests override it per rank; without it, every rank runs on this machine).
struct HostLayout {
  size_t hosts = 1;
  int local_rank = 0;
  int local_size = 0;
  bool even = true;  // every host holds as many ranks as this one
  // Across hosts: two levels where the hosts are even and hold more than one rank each, else
  // through each host's first rank.
  bool two_level() const { return hosts > 1 && even && local_size > 1; }
};

HostLayout host_layout() {
  const char* cross = std::getenv("CROSS_RANK");
  Bytes mine(sizeof(int32_t)), all(sizeof(int32_t) * world());
  const int32_t host_index = cross == nullptr ? 0 : std::atoi(cross);
  std::memcpy(mine.data(), &host_index, sizeof host_index);
  strata_buffer send = view(mine, STRATA_I32), recv = view(all, STRATA_I32);
  run(Mode::Blocking, instance(), [&](strata_request* req, strata_error* e) {
    return abi::allgather(instance(), &send, &recv, req, e);
  });
  std::vector<int32_t> hosts(world());
  std::memcpy(hosts.data(), all.data(), all.size());
  HostLayout layout;
  for (int r = 0; r < world(); ++r) {
    layout.local_size += hosts[r] == host_index;
    layout.local_rank += hosts[r] == host_index && r < rank();
  }
  layout.hosts = std::set<int32_t>(hosts.begin(), hosts.end()).size();
  for (int32_t h : hosts) {
    layout.even = layout.even && std::count(hosts.begin(), hosts.end(), h) == layout.local_size;
  }
  return layout;
}

TEST(Gloo, CreateLogsOneLineAndCapsCountHosts) {
  const size_t mark = log_mark();
  strata_error err = sdk::make_error();
  void* self = nullptr;
  ASSERT_EQ(abi::create(R"({"hierarchical": true, "timeout_ms": 20000})", &self, &err), STRATA_OK)
      << err.message;
  const std::vector<std::string> lines = log_since(mark);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("gloo on (" + std::to_string(world()) + " rank"), std::string::npos)
      << lines[0];
  // On one machine the device binds loopback (the address that reaches MASTER_ADDR 127.0.0.1);
  // across hosts (tests/multinode) each rank's own address on the job's network.
  const char* master = std::getenv("MASTER_ADDR");
  const bool loopback = master != nullptr && std::string(master).rfind("127.", 0) == 0;
  // The agreement's form in effect: direct up to 16 ranks by default.
  const std::string forms =
      "auto: direct at 2 ranks below 1 MiB, bcube below 2 MiB, else ring, agreement direct, "
      "hierarchical)";
  EXPECT_NE(lines[0].find(loopback ? "tcp 127.0.0.1, " + forms : ", " + forms), std::string::npos)
      << lines[0];
  if (!loopback) {
    EXPECT_EQ(lines[0].find("tcp 127."), std::string::npos) << lines[0];
  }
  strata_comm_caps caps{};
  caps.struct_size = sizeof caps;
  ASSERT_EQ(ops().query(self, &caps, &err), STRATA_OK) << err.message;
  EXPECT_EQ(caps.rank, rank());
  EXPECT_EQ(caps.size, world());
  const HostLayout layout = host_layout();
  const size_t distinct = layout.hosts;
  EXPECT_EQ(caps.local_size, layout.local_size);
  EXPECT_EQ(caps.local_rank, layout.local_rank);
  EXPECT_NE(lines[0].find(std::to_string(distinct) + (distinct == 1 ? " host," : " hosts,")),
            std::string::npos)
      << lines[0];
  const bool two_level = layout.two_level();
  EXPECT_EQ(lines[0].find("; two-level allreduce: within hosts shm on (") != std::string::npos,
            two_level)
      << lines[0];
  EXPECT_EQ(lines[0].find("; agreement in two levels") != std::string::npos, two_level)
      << lines[0];
  EXPECT_EQ(lines[0].find("; hierarchical allreduce through each host's first rank") !=
                std::string::npos,
            distinct > 1 && !two_level)
      << lines[0];
  EXPECT_EQ(caps.nonblocking, 1);
  ops().destroy(self);
  // "agreement": "ring" says so, whatever the size.
  const size_t ring_mark = log_mark();
  ASSERT_EQ(abi::create(R"({"agreement": "ring", "timeout_ms": 20000})", &self, &err), STRATA_OK)
      << err.message;
  const std::vector<std::string> ring_lines = log_since(ring_mark);
  ASSERT_EQ(ring_lines.size(), 1u);
  EXPECT_NE(ring_lines[0].find(", agreement ring"), std::string::npos) << ring_lines[0];
  // "hierarchical" is "auto" by default: on exactly where the two-level form runs.
  EXPECT_EQ(ring_lines[0].find(", hierarchical (auto)") != std::string::npos, two_level)
      << ring_lines[0];
  EXPECT_EQ(ring_lines[0].find("; two-level allreduce: within hosts shm on (") != std::string::npos,
            two_level)
      << ring_lines[0];
  if (two_level) {
    // The ring agreement among the hosts, in two levels: an allreduce past the frame's payload
    // (1200 bytes), then one where the last rank passes an element more, named on every rank.
    for (const int extra : {0, 1}) {
      Bytes data = rank_input(STRATA_I32, rank(), 300 + (rank() == world() - 1 ? extra : 0));
      strata_buffer buffer = view(data, STRATA_I32);
      strata_error e = sdk::make_error();
      const strata_status status = abi::allreduce(self, &buffer, &buffer, STRATA_SUM, nullptr, &e);
      if (extra == 0) {
        ASSERT_EQ(status, STRATA_OK) << e.message;
        EXPECT_EQ(first_difference(data, expected_reduction(STRATA_I32, STRATA_SUM, world(), 300),
                                   STRATA_I32),
                  "");
      } else {
        EXPECT_EQ(status, STRATA_ERR_MISMATCH) << e.message;
        EXPECT_NE(std::string(e.message).find("rank 0 called allreduce SUM of 300 i32, rank " +
                                              std::to_string(world() - 1) +
                                              " called allreduce SUM of 301 i32"),
                  std::string::npos)
            << e.message;
      }
    }
  }
  ops().destroy(self);
  // Without shared memory "auto" never takes the form through each host's first rank: flat.
  const size_t flat_mark = log_mark();
  ASSERT_EQ(abi::create(R"({"shm": false, "timeout_ms": 20000})", &self, &err), STRATA_OK)
      << err.message;
  const std::vector<std::string> flat_lines = log_since(flat_mark);
  ASSERT_EQ(flat_lines.size(), 1u);
  EXPECT_EQ(flat_lines[0].find("hierarchical"), std::string::npos) << flat_lines[0];
  ops().destroy(self);
}

// The default instance (shared memory on one host, else Gloo over TCP with algorithm "auto")
// against the other variants: hierarchical over TCP (chunked_instance), shared memory in one-page
// rounds (shm_instance; the default's path where shared memory is off) and the ring over TCP
// (mpi_instance). 3001 elements take bcube under "auto"; 2 MiB / 4 + 7 f32 elements, once, take
// its ring. The inputs are small integers, so every summation order is exact: the same bits, and
// the same on every rank.
TEST(Gloo, VariantsEqualTheDefaultInstance) {
  struct Case {
    int32_t dtype, op;
    uint64_t count;
  };
  std::vector<Case> cases;
  for (int32_t dtype : kAllDtypes) {
    for (int32_t op : kAllOps) cases.push_back({dtype, op, 3001});
  }
  cases.push_back({STRATA_F32, STRATA_SUM, (uint64_t{2} << 20) / 4 + 7});
  for (void* variant : {chunked_instance(), shm_instance(), mpi_instance()}) {
    for (const auto& [dtype, op_binding, count] : cases) {
      const int32_t op = op_binding;  // the lambdas capture it: C++20 for a structured binding
      SCOPED_TRACE(std::string(sdk::dtype_name(dtype)) + " " + op_label(op) + " count " +
                   std::to_string(count));
      Bytes flat = rank_input(dtype, rank(), count), other = flat;
      strata_buffer f = view(flat, dtype), o = view(other, dtype);
      run(Mode::Blocking, instance(), [&](strata_request* req, strata_error* err) {
        return abi::allreduce(instance(), &f, &f, op, req, err);
      });
      run(Mode::Nonblocking, variant, [&](strata_request* req, strata_error* err) {
        return abi::allreduce(variant, &o, &o, op, req, err);
      });
      EXPECT_EQ(first_difference(other, flat, dtype), "");
      expect_same_on_all_ranks(other);
    }
  }
}

// The direct allreduce (direct_allreduce.hpp: one whole-buffer exchange at 2 ranks, a direct
// reduce-scatter and allgather above) folds every element once, in rank order: the result is
// bitwise rank 0's value + rank 1's + ..., on every rank. The inputs have random exponents, so
// that another summation order (Gloo's bcube or ring) rounds differently. Payloads of at most
// 1 KiB travel in the agreement frame instead, so the counts start just above it (257 f32): uneven
// blocks at 3 ranks and more, and one above Gloo's 1 MiB segment. (Empty blocks, count < ranks,
// reach the direct form only as the two-level path's tail between 3 or more hosts: the next test.)
double direct_input(int rank, uint64_t i) {
  uint64_t h = (static_cast<uint64_t>(rank) + 1) * 0x9e3779b97f4a7c15ull ^ (i * 0xbf58476d1ce4e5b9ull);
  h ^= h >> 31;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 29;
  const double unit = static_cast<double>(h >> 40) * 0x1p-24 - 0.5;
  return std::ldexp(unit, static_cast<int>(h % 24) - 12);
}

TEST(Gloo, DirectAllreduceFoldsInRankOrder) {
  if (world() < 2) GTEST_SKIP() << "needs two ranks";
  strata_error err = sdk::make_error();
  void* self = nullptr;
  ASSERT_EQ(abi::create(R"({"shm": false, "algorithm": "direct"})", &self, &err), STRATA_OK)
      << err.message;
  const auto n = static_cast<uint64_t>(world());
  for (uint64_t count : {uint64_t{257}, 64 * n + 1, 64 * n + n - 1, uint64_t{3001},
                         uint64_t{300'007}}) {
    SCOPED_TRACE("count " + std::to_string(count));
    std::vector<float> f(count), f_expected(count);
    std::vector<double> d(count), d_expected(count);
    for (uint64_t i = 0; i < count; ++i) {
      f[i] = static_cast<float>(direct_input(rank(), i));
      d[i] = direct_input(rank(), i);
      float fs = static_cast<float>(direct_input(0, i));
      double ds = direct_input(0, i);
      for (int r = 1; r < world(); ++r) {
        fs += static_cast<float>(direct_input(r, i));
        ds += direct_input(r, i);
      }
      f_expected[i] = fs;
      d_expected[i] = ds;
    }
    strata_buffer fb = sdk::host_buffer(f.data(), count, STRATA_F32);
    strata_buffer db = sdk::host_buffer(d.data(), count, STRATA_F64);
    run(Mode::Blocking, self, [&](strata_request* req, strata_error* e) {
      return abi::allreduce(self, &fb, &fb, STRATA_SUM, req, e);
    });
    run(Mode::Nonblocking, self, [&](strata_request* req, strata_error* e) {
      return abi::allreduce(self, &db, &db, STRATA_SUM, req, e);
    });
    EXPECT_EQ(std::memcmp(f.data(), f_expected.data(), count * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(d.data(), d_expected.data(), count * sizeof(double)), 0);
  }
  // An integer MIN and a MAX (no summation order to tell apart, but every block's fold).
  Bytes data = rank_input(STRATA_I32, rank(), 1001);
  strata_buffer buffer = view(data, STRATA_I32);
  run(Mode::Blocking, self, [&](strata_request* req, strata_error* e) {
    return abi::allreduce(self, &buffer, &buffer, STRATA_MIN, req, e);
  });
  EXPECT_EQ(first_difference(data, expected_reduction(STRATA_I32, STRATA_MIN, world(), 1001),
                             STRATA_I32),
            "");
  ops().destroy(self);
}

// Between 3 or more hosts of L ranks each (comm_gloo_three_hosts_np6: 3 x 2), the elements of a
// two-level allreduce past its last whole block of L (fewer than L) cross the hosts through the
// hosts' first ranks: there the direct allreduce has fewer elements than ranks, so some ranks'
// blocks are empty (they send and fold nothing, and still receive the others'). Integers and
// small-integer floats: every summation order is exact.
TEST(Gloo, DirectAllreduceWithEmptyBlocksAcrossThreeHosts) {
  const HostLayout layout = host_layout();
  if (layout.hosts < 3 || !layout.two_level()) {
    GTEST_SKIP() << "needs 3 or more hosts of as many ranks, 2 or more each (CROSS_RANK; "
                    "comm_gloo_three_hosts_np6), not "
                 << layout.hosts << " host(s) with " << layout.local_size << " rank(s) here";
  }
  const size_t mark = log_mark();
  strata_error err = sdk::make_error();
  void* self = nullptr;
  ASSERT_EQ(abi::create(R"({"hierarchical": true, "algorithm": "direct", "timeout_ms": 20000})",
                        &self, &err),
            STRATA_OK)
      << err.message;
  const std::vector<std::string> lines = log_since(mark);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("; two-level allreduce: within hosts shm on ("), std::string::npos)
      << lines[0];
  const auto local = static_cast<uint64_t>(layout.local_size);
  // Past the agreement frame's 1 KiB, with every tail from 1 to L - 1 elements (L < hosts at 3 x 2,
  // so the direct form's blocks past the tail's are empty).
  for (uint64_t tail = 1; tail < local; ++tail) {
    const uint64_t count = 300 * local + tail;
    SCOPED_TRACE("count " + std::to_string(count));
    for (const auto& [dtype, op] : {std::pair{STRATA_I32, STRATA_SUM}, {STRATA_I32, STRATA_MIN},
                                    {STRATA_I32, STRATA_MAX}, {STRATA_F32, STRATA_SUM}}) {
      for (const bool in_place : {true, false}) {
        const Bytes input = rank_input(dtype, rank(), count);
        Bytes data = input, out(input.size());
        strata_buffer send = view(data, dtype), recv = view(in_place ? data : out, dtype);
        run(Mode::Blocking, self, [&](strata_request* req, strata_error* e) {
          return abi::allreduce(self, &send, &recv, op, req, e);
        });
        EXPECT_EQ(first_difference(in_place ? data : out,
                                   expected_reduction(dtype, op, world(), count), dtype),
                  "")
            << sdk::dtype_name(dtype) << " op " << op << (in_place ? " in place" : "");
        if (!in_place) {
          EXPECT_EQ(data, input) << "the send buffer changed";
        }
      }
    }
  }
  ops().destroy(self);
}

// With a timeline, each collective is one span with the caller's payload in bytes, recorded on
// the thread that ran it: "gloo_<collective>" over Gloo's TCP pairs, "shm_<collective>" through
// shared memory (the default on one host, when create() logs the job-wide "; shm on (").
std::mutex g_span_mutex;
std::vector<std::pair<std::string, uint64_t>> g_spans;

void expect_spans_named(const char* config) {
  SCOPED_TRACE(config);
  strata_host_api* api = host().api();
  const auto saved_enabled = api->trace_enabled;
  const auto saved_span = api->trace_span;
  api->trace_enabled = [](void*) -> int32_t { return 1; };
  api->trace_span = [](void*, const strata_trace_span* span) {
    std::lock_guard lock(g_span_mutex);
    g_spans.emplace_back(span->name, span->bytes);
  };
  {
    std::lock_guard lock(g_span_mutex);
    g_spans.clear();
  }
  const size_t mark = log_mark();
  strata_error err = sdk::make_error();
  void* self = nullptr;
  ASSERT_EQ(abi::create(config, &self, &err), STRATA_OK) << err.message;
  bool on_shm = false;
  for (const std::string& line : log_since(mark)) {
    on_shm = on_shm || line.find("; shm on (") != std::string::npos;  // the job-wide group
  }
  Bytes data = rank_input(STRATA_F32, rank(), 5);
  strata_buffer buffer = view(data, STRATA_F32);
  run(Mode::Nonblocking, self, [&](strata_request* req, strata_error* e) {
    return abi::allreduce(self, &buffer, &buffer, STRATA_SUM, req, e);
  });
  run(Mode::Blocking, self, [&](strata_request* req, strata_error* e) {
    return abi::barrier(self, req, e);
  });
  ops().destroy(self);
  // The host's answer is fixed for the instance's lifetime: restore only once it is gone.
  api->trace_enabled = saved_enabled;
  api->trace_span = saved_span;
  const std::string prefix = on_shm ? "shm_" : "gloo_";
  std::lock_guard lock(g_span_mutex);
  ASSERT_EQ(g_spans.size(), 2u);
  EXPECT_EQ(g_spans[0], (std::pair<std::string, uint64_t>{prefix + "allreduce", 20}));
  EXPECT_EQ(g_spans[1], (std::pair<std::string, uint64_t>{prefix + "barrier", 0}));
}

TEST(Gloo, TimelineSpansNameTheCollective) {
  expect_spans_named(R"({"shm": false})");
  expect_spans_named("{}");
}

}  // namespace
}  // namespace strata::test::comm
