// ABI 1.10's optional comm members: alltoallv (uneven blocks, zeros included, every claimed dtype
// moved bit for bit, blocking and non-blocking, bad arguments) and split (sub-groups by color,
// ordered by key; STRATA_COMM_SPLIT_NONE; a child split again; alltoallv on a child). A plugin
// whose caps lack STRATA_COLL_ALLTOALLV (collective_mask) or STRATA_COMM_FEATURE_SPLIT (features)
// skips the tests of that member, saying so; caps that claim one whose function is NULL fail.
//
// Every rank computes what each group must look like from the colors and keys alone, and checks
// membership with an allreduce of one bit per world rank and the order with an allgather of the
// world ranks: a collective that reached a rank outside the group shows as a wrong mask.
#include "comm_backend.hpp"
#include "comm_env.hpp"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace strata::test::comm {
namespace {

strata_comm_caps caps_of(void* self) {
  strata_comm_caps caps{};
  caps.struct_size = sizeof caps;
  strata_error err = sdk::make_error();
  EXPECT_EQ(ops().query(self, &caps, &err), STRATA_OK) << err.message;
  return caps;
}

// The table's 1.10 members, NULL where its header says the table is older (smaller).
bool table_has_1_10() { return ops().header.struct_size >= STRATA_COMM_OPS_SIZE_1_10; }
decltype(strata_comm_ops::alltoallv) alltoallv_fn() {
  return table_has_1_10() ? ops().alltoallv : nullptr;
}
decltype(strata_comm_ops::split) split_fn() { return table_has_1_10() ? ops().split : nullptr; }

std::string plugin_name() { return descriptor().name != nullptr ? descriptor().name : "?"; }

bool claims_alltoallv() {
  return (caps_of(instance()).collective_mask & STRATA_COLL_BIT(STRATA_COLL_ALLTOALLV)) != 0;
}
bool claims_split() { return (caps_of(instance()).features & STRATA_COMM_FEATURE_SPLIT) != 0; }
bool nonblocking() { return caps_of(instance()).nonblocking != 0; }

// Skips (saying why) when the caps do not offer the member; fails when they claim it but the
// table has no function for it.
#define REQUIRE_ALLTOALLV()                                                                     \
  do {                                                                                          \
    if (!claims_alltoallv()) {                                                                  \
      GTEST_SKIP() << plugin_name()                                                             \
                   << ": caps.collective_mask lacks STRATA_COLL_ALLTOALLV (ABI 1.10): alltoallv " \
                      "is not offered, so it is not tested";                                    \
    }                                                                                           \
    ASSERT_NE(alltoallv_fn(), nullptr)                                                          \
        << "caps.collective_mask claims STRATA_COLL_ALLTOALLV but the ops table has no "        \
           "alltoallv (NULL, or past header.struct_size "                                       \
        << ops().header.struct_size << ")";                                                     \
  } while (0)

#define REQUIRE_SPLIT()                                                                         \
  do {                                                                                          \
    if (!claims_split()) {                                                                      \
      GTEST_SKIP() << plugin_name()                                                             \
                   << ": caps.features lacks STRATA_COMM_FEATURE_SPLIT (ABI 1.10): split is "   \
                      "not offered, so it is not tested";                                       \
    }                                                                                           \
    ASSERT_NE(split_fn(), nullptr)                                                              \
        << "caps.features claims STRATA_COMM_FEATURE_SPLIT but the ops table has no split "     \
           "(NULL, or past header.struct_size "                                                 \
        << ops().header.struct_size << ")";                                                     \
  } while (0)

std::vector<Mode> modes() {
  if (nonblocking()) return {Mode::Blocking, Mode::Nonblocking};
  return {Mode::Blocking};
}

std::vector<int32_t> claimed_dtypes() {
  std::vector<int32_t> dtypes;
  const uint32_t mask = caps_of(instance()).dtype_mask;
  for (int32_t dtype : kAllDtypes) {
    if ((mask & STRATA_DTYPE_BIT(dtype)) != 0) dtypes.push_back(dtype);
  }
  return dtypes;
}

// ---- alltoallv ------------------------------------------------------------------------------

strata_status call_alltoallv(void* self, const strata_buffer* send, const strata_buffer* recv,
                             const uint64_t* send_counts, const uint64_t* send_displs,
                             const uint64_t* recv_counts, const uint64_t* recv_displs,
                             strata_request* req, strata_error* err) {
  strata_coll_args args = sdk::Comm::args(send, recv);
  args.send_counts = send_counts;
  args.send_displs = send_displs;
  args.recv_counts = recv_counts;
  args.displs = recv_displs;
  return alltoallv_fn()(self, &args, req, err);
}

// Elements group rank `s` sends to group rank `d`: uneven, with zeros. Rank 1 sends nothing at
// all, rank 2 receives nothing at all (in groups that have them), and some other pairs are 0.
// scale 0: every block is empty.
uint64_t pair_count(int s, int d, uint64_t scale) {
  if (s == 1 || d == 2) return 0;
  return static_cast<uint64_t>((7 * s + 3 * d + 1) % 5) * scale;
}

// Byte `i` of the block world rank `from` sends to world rank `to`: hashed, so that every float
// dtype sees NaN, infinity, subnormal and negative-zero patterns that must arrive unchanged.
unsigned char payload_byte(int from, int to, uint64_t i) {
  uint64_t x = static_cast<uint64_t>(from) * 1000003u + static_cast<uint64_t>(to) * 7919u +
               i * 2654435761u + 0x9e3779b97f4a7c15u;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9u;
  x ^= x >> 27;
  return static_cast<unsigned char>(x >> 24);
}

constexpr unsigned char kGap = 0xAB;

// One rank's alltoallv in a group whose members (world ranks, in group-rank order) are `members`:
// its buffers, laid out with gaps, and what recv must hold after.
struct Exchange {
  int32_t dtype = STRATA_F32;
  std::vector<uint64_t> send_counts, send_displs, recv_counts, recv_displs;
  Bytes send, recv, expected;
  strata_buffer send_view{}, recv_view{};

  Exchange(int32_t type, const std::vector<int>& members, int me, uint64_t scale, bool gaps = true)
      : dtype(type) {
    const size_t n = members.size();
    const size_t size = sdk::dtype_size(dtype);
    send_counts.assign(n, 0);
    send_displs.assign(n, 0);
    recv_counts.assign(n, 0);
    recv_displs.assign(n, 0);
    const uint64_t gap = gaps ? 1 : 0;
    // Send blocks in reverse rank order, one element apart; receive blocks in reverse order with
    // r + 1 elements before rank r's and 2 after the last (gaps only).
    uint64_t send_total = 0, recv_total = 0;
    for (size_t r = n; r-- > 0;) {
      send_counts[r] = pair_count(me, static_cast<int>(r), scale);
      send_displs[r] = send_total + gap;
      send_total = send_displs[r] + send_counts[r];
      recv_counts[r] = pair_count(static_cast<int>(r), me, scale);
      recv_displs[r] = recv_total + gap * (r + 1);
      recv_total = recv_displs[r] + recv_counts[r];
    }
    send_total += gap;
    recv_total += 2 * gap;
    send.assign(send_total * size, 0xCD);
    recv.assign(recv_total * size, kGap);
    expected = recv;
    for (size_t r = 0; r < n; ++r) {
      for (uint64_t i = 0; i < send_counts[r] * size; ++i) {
        send[send_displs[r] * size + i] = payload_byte(members[me], members[r], i);
      }
      for (uint64_t i = 0; i < recv_counts[r] * size; ++i) {
        expected[recv_displs[r] * size + i] = payload_byte(members[r], members[me], i);
      }
    }
    send_view = view(send, dtype);
    recv_view = view(recv, dtype);
  }

  strata_status start(void* self, strata_request* req, strata_error* err) const {
    return call_alltoallv(self, &send_view, &recv_view, send_counts.data(), send_displs.data(),
                          recv_counts.data(), recv_displs.data(), req, err);
  }

  // Empty when recv is as expected; else the first differing element and whose block it is in.
  std::string difference() const {
    const size_t size = sdk::dtype_size(dtype);
    if (recv.size() != expected.size()) return "recv changed size";
    for (size_t b = 0; b < recv.size(); ++b) {
      if (recv[b] == expected[b]) continue;
      const uint64_t element = b / size;
      std::string whose = "a gap between the blocks (must stay untouched)";
      for (size_t r = 0; r < recv_counts.size(); ++r) {
        if (element >= recv_displs[r] && element < recv_displs[r] + recv_counts[r]) {
          whose = "the block from group rank " + std::to_string(r) + ", its element " +
                  std::to_string(element - recv_displs[r]);
        }
      }
      return "element " + std::to_string(element) + " (" + whose + "), byte " +
             std::to_string(b % size) + ": got " + std::to_string(recv[b]) + ", expected " +
             std::to_string(expected[b]);
    }
    return {};
  }
};

std::vector<int> world_members() {
  std::vector<int> members(world());
  for (int r = 0; r < world(); ++r) members[r] = r;
  return members;
}

void check_alltoallv(void* self, const std::vector<int>& members, int me, int32_t dtype, Mode mode,
                     uint64_t scale) {
  SCOPED_TRACE(std::string(sdk::dtype_name(dtype)) + " " + mode_name(mode) + " scale " +
               std::to_string(scale));
  Exchange x(dtype, members, me, scale);
  run(mode, self, [&](strata_request* req, strata_error* err) { return x.start(self, req, err); });
  EXPECT_EQ(x.difference(), "");
}

constexpr uint64_t kScales[] = {0, 1, 750};  // all empty; 0-4 elements; up to 3000 elements

TEST(Alltoallv, CapsBitHasItsFunction) {
  REQUIRE_ALLTOALLV();
  EXPECT_GE(ops().header.built_minor, 10u) << "a table with alltoallv is ABI 1.10 or later";
}

TEST(Alltoallv, EveryDtypeModeAndCount) {
  REQUIRE_ALLTOALLV();
  const std::vector<int32_t> dtypes = claimed_dtypes();
  ASSERT_FALSE(dtypes.empty());
  for (int32_t dtype : dtypes)
    for (Mode mode : modes())
      for (uint64_t scale : kScales) check_alltoallv(instance(), world_members(), rank(), dtype, mode, scale);
}

// The other instances of the suite (their own paths: chunked, shared memory, MPI only or their
// Gloo equivalents).
TEST(Alltoallv, EveryInstance) {
  REQUIRE_ALLTOALLV();
  const std::pair<const char*, void*> instances[] = {{"chunked", chunked_instance()},
                                                     {"shm", shm_instance()},
                                                     {"mpi", mpi_instance()}};
  for (const auto& [name, self] : instances) {
    SCOPED_TRACE(name);
    for (int32_t dtype : {STRATA_BF16, STRATA_F64})
      for (Mode mode : modes())
        for (uint64_t scale : {uint64_t{1}, uint64_t{750}})
          check_alltoallv(self, world_members(), rank(), dtype, mode, scale);
  }
}

// Every count 0 and no buffer at all (data NULL, count 0): nothing to move, nothing to refuse.
TEST(Alltoallv, EmptyBuffersWithoutData) {
  REQUIRE_ALLTOALLV();
  for (Mode mode : modes()) {
    SCOPED_TRACE(mode_name(mode));
    Exchange x(STRATA_I32, world_members(), rank(), 0, /*gaps=*/false);
    ASSERT_TRUE(x.send.empty() && x.recv.empty());
    EXPECT_EQ(x.send_view.data, nullptr);
    run(mode, instance(), [&](strata_request* req, strata_error* err) {
      return x.start(instance(), req, err);
    });
  }
}

// Two alltoallv and an allreduce in flight at once, waited in reverse order.
TEST(Alltoallv, SeveralInFlightWaitedInReverse) {
  REQUIRE_ALLTOALLV();
  if (!nonblocking()) GTEST_SKIP() << plugin_name() << ": caps.nonblocking is 0";
  strata_error err = sdk::make_error();
  Exchange first(STRATA_F16, world_members(), rank(), 750);
  Exchange second(STRATA_U8, world_members(), rank(), 3);
  Bytes sum = rank_input(STRATA_I64, rank(), 1001), sum_out(sum.size());
  strata_buffer sum_send = view(sum, STRATA_I64), sum_recv = view(sum_out, STRATA_I64);
  strata_request reqs[3] = {};
  ASSERT_EQ(first.start(instance(), &reqs[0], &err), STRATA_OK) << err.message;
  ASSERT_EQ(abi::allreduce(instance(), &sum_send, &sum_recv, STRATA_SUM, &reqs[1], &err),
            STRATA_OK)
      << err.message;
  ASSERT_EQ(second.start(instance(), &reqs[2], &err), STRATA_OK) << err.message;
  for (int i = 2; i >= 0; --i) {
    ASSERT_NE(reqs[i], nullptr);
    ASSERT_EQ(ops().wait(instance(), reqs[i], &err), STRATA_OK) << "request " << i << ": " << err.message;
  }
  EXPECT_EQ(first.difference(), "") << "first alltoallv (f16)";
  EXPECT_EQ(second.difference(), "") << "second alltoallv (u8)";
  EXPECT_EQ(first_difference(sum_out, expected_reduction(STRATA_I64, STRATA_SUM, world(), 1001),
                             STRATA_I64),
            "")
      << "allreduce between them";
}

// Bad arguments: each bad on every rank (no rank enters a collective the others skip), refused
// blocking and non-blocking with INVALID_ARGUMENT (a too small args struct: ABI) and a message
// naming the argument; a refused non-blocking call hands out no request.
TEST(Alltoallv, BadArguments) {
  REQUIRE_ALLTOALLV();
  void* s = instance();
  Exchange x(STRATA_F32, world_members(), rank(), 2);
  strata_error err = sdk::make_error();
  const auto expect = [&](strata_status status, const std::string& mentions,
                          const std::function<strata_status(strata_request*)>& call) {
    for (Mode mode : modes()) {
      SCOPED_TRACE(std::string(mode_name(mode)) + ", expecting \"" + mentions + "\"");
      strata_request req = reinterpret_cast<strata_request>(0x1);
      const strata_status got = call(mode == Mode::Nonblocking ? &req : nullptr);
      EXPECT_EQ(got, status) << err.message;
      EXPECT_NE(std::string(err.message).find(mentions), std::string::npos) << err.message;
      if (mode == Mode::Nonblocking) {
        EXPECT_EQ(req, nullptr) << "a failed call must not hand out a request";
        if (got == STRATA_OK && req != nullptr && req != reinterpret_cast<strata_request>(0x1)) {
          ops().wait(s, req, &err);  // accepted anyway: free it
        }
      }
    }
  };
  const uint64_t* sc = x.send_counts.data();
  const uint64_t* sd = x.send_displs.data();
  const uint64_t* rc = x.recv_counts.data();
  const uint64_t* rd = x.recv_displs.data();
  auto with = [&](const uint64_t* a, const uint64_t* b, const uint64_t* c, const uint64_t* d,
                  const strata_buffer* send, const strata_buffer* recv) {
    return [=, &err](strata_request* req) {
      return call_alltoallv(s, send, recv, a, b, c, d, req, &err);
    };
  };
  const strata_buffer* send = &x.send_view;
  const strata_buffer* recv = &x.recv_view;
  expect(STRATA_ERR_INVALID_ARGUMENT, "send_counts is NULL", with(nullptr, sd, rc, rd, send, recv));
  expect(STRATA_ERR_INVALID_ARGUMENT, "send_displs is NULL", with(sc, nullptr, rc, rd, send, recv));
  expect(STRATA_ERR_INVALID_ARGUMENT, "recv_counts is NULL", with(sc, sd, nullptr, rd, send, recv));
  expect(STRATA_ERR_INVALID_ARGUMENT, "displs is NULL", with(sc, sd, rc, nullptr, send, recv));
  expect(STRATA_ERR_INVALID_ARGUMENT, "send is NULL", with(sc, sd, rc, rd, nullptr, recv));
  expect(STRATA_ERR_INVALID_ARGUMENT, "recv is NULL", with(sc, sd, rc, rd, send, nullptr));

  // A block one element past the end of its buffer (the last rank's: the first in the layout, so
  // move it to the end).
  const size_t last = static_cast<size_t>(world() - 1);
  const std::string index = "[" + std::to_string(last) + "]";
  std::vector<uint64_t> bad_sd = x.send_displs, bad_sc = x.send_counts;
  bad_sc[last] = 1;
  bad_sd[last] = x.send_view.count;
  expect(STRATA_ERR_INVALID_ARGUMENT, "send_displs" + index + " + send_counts" + index,
         with(bad_sc.data(), bad_sd.data(), rc, rd, send, recv));
  std::vector<uint64_t> bad_rd = x.recv_displs, bad_rc = x.recv_counts;
  bad_rc[last] = 1;
  bad_rd[last] = x.recv_view.count;
  expect(STRATA_ERR_INVALID_ARGUMENT, "displs" + index + " + recv_counts" + index,
         with(sc, sd, bad_rc.data(), bad_rd.data(), send, recv));
  // A count so large that displs + count wraps around 2^64.
  bad_rc[last] = UINT64_MAX;
  bad_rd[last] = 1;
  expect(STRATA_ERR_INVALID_ARGUMENT, "displs" + index + " + recv_counts" + index,
         with(sc, sd, bad_rc.data(), bad_rd.data(), send, recv));

  // In place (send.data == recv.data, every block inside the one buffer): not allowed.
  Bytes both(std::max(x.send.size(), x.recv.size()));
  const strata_buffer both_view = view(both, STRATA_F32);
  expect(STRATA_ERR_INVALID_ARGUMENT, "in place", with(sc, sd, rc, rd, &both_view, &both_view));

  // Mismatched dtypes.
  strata_buffer other = x.recv_view;
  other.dtype = STRATA_I32;
  expect(STRATA_ERR_INVALID_ARGUMENT, "recv.dtype (i32) must equal send.dtype (f32)",
         with(sc, sd, rc, rd, send, &other));

  // A NULL args struct, and one of ABI 1.3's size (no send_counts/send_displs): refused before
  // any field past struct_size is read.
  expect(STRATA_ERR_INVALID_ARGUMENT, "alltoallv: args is NULL",
         [&](strata_request* req) { return alltoallv_fn()(s, nullptr, req, &err); });
  strata_coll_args small = sdk::Comm::args(send, recv);
  small.recv_counts = rc;
  small.displs = rd;
  small.send_counts = sc;
  small.send_displs = sd;
  small.struct_size = STRATA_COLL_ARGS_SIZE_1_3;
  expect(STRATA_ERR_ABI, "args->struct_size " + std::to_string(STRATA_COLL_ARGS_SIZE_1_3),
         [&](strata_request* req) { return alltoallv_fn()(s, &small, req, &err); });
  // The instance still works after all that.
  check_alltoallv(s, world_members(), rank(), STRATA_F32, Mode::Blocking, 1);
}

// ---- split ----------------------------------------------------------------------------------

// An instance from split(), destroyed with this object (before the parent it came from).
class Child {
 public:
  Child() = default;
  explicit Child(void* self) : self_(self) {}
  Child(Child&& other) noexcept : self_(std::exchange(other.self_, nullptr)) {}
  Child& operator=(Child&& other) noexcept {
    reset();
    self_ = std::exchange(other.self_, nullptr);
    return *this;
  }
  ~Child() { reset(); }
  void reset() {
    if (self_ != nullptr) ops().destroy(self_);
    self_ = nullptr;
  }
  void* get() const { return self_; }

 private:
  void* self_ = nullptr;
};

// split() of `parent` with `color` and `key`; fails the test on an error. *child is preset to a
// non-NULL value so that a NULL child is one the plugin wrote.
Child split(void* parent, int32_t color, int32_t key) {
  strata_comm_split_args args{};
  args.struct_size = sizeof args;
  args.color = color;
  args.key = key;
  void* child = reinterpret_cast<void*>(0x1);
  strata_error err = sdk::make_error();
  const strata_status status = split_fn()(parent, &args, &child, &err);
  EXPECT_EQ(status, STRATA_OK) << "split(color " << color << ", key " << key << "): " << err.message;
  if (status != STRATA_OK) return Child();
  if (color == STRATA_COMM_SPLIT_NONE) {
    EXPECT_EQ(child, nullptr) << "STRATA_COMM_SPLIT_NONE must give *child = NULL";
    return Child();
  }
  EXPECT_NE(child, nullptr) << "split(color " << color << ") gave no child";
  return Child(child == reinterpret_cast<void*>(0x1) ? nullptr : child);
}

// The members (world ranks, in child-rank order) of the group `me` joins when the parent's ranks
// (world ranks `parent`, in parent-rank order) pass colors[i] / keys[i]: those of the same color,
// by key, ties by parent rank. Empty for STRATA_COMM_SPLIT_NONE.
std::vector<int> members_of(const std::vector<int>& parent, const std::vector<int>& colors,
                            const std::vector<int>& keys, int me) {
  const size_t mine = static_cast<size_t>(std::find(parent.begin(), parent.end(), me) - parent.begin());
  std::vector<size_t> order;
  if (colors[mine] == STRATA_COMM_SPLIT_NONE) return {};
  for (size_t i = 0; i < parent.size(); ++i) {
    if (colors[i] == colors[mine]) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
  std::vector<int> members;
  for (size_t i : order) members.push_back(parent[i]);
  return members;
}

int index_of(const std::vector<int>& members, int world_rank) {
  return static_cast<int>(std::find(members.begin(), members.end(), world_rank) - members.begin());
}

std::string list(const std::vector<int>& ranks) {
  std::string text = "{";
  for (size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text + "}";
}

// The child's caps: rank and size from `members`; local_* consistent (equal to rank/size when the
// whole job is on one host); no collective or dtype its parent lacks, the Required collectives,
// the world's nonblocking, and SPLIT (a child may be split again).
void check_child_caps(void* child, const std::vector<int>& members) {
  const strata_comm_caps caps = caps_of(child);
  const strata_comm_caps world_caps = caps_of(instance());
  EXPECT_EQ(caps.size, static_cast<int32_t>(members.size())) << "members " << list(members);
  EXPECT_EQ(caps.rank, index_of(members, rank())) << "members " << list(members);
  EXPECT_GE(caps.local_rank, 0);
  EXPECT_LT(caps.local_rank, caps.local_size);
  EXPECT_LE(caps.local_size, caps.size);
  if (world_caps.local_size == world_caps.size) {  // one host: every member is local
    EXPECT_EQ(caps.local_size, caps.size);
    EXPECT_EQ(caps.local_rank, caps.rank);
  }
  EXPECT_EQ(caps.dtype_mask & ~world_caps.dtype_mask, 0u) << "dtypes the world lacks";
  EXPECT_EQ(caps.collective_mask & ~world_caps.collective_mask, 0u) << "collectives the world lacks";
  for (int32_t required :
       {STRATA_COLL_ALLREDUCE, STRATA_COLL_ALLGATHER, STRATA_COLL_BROADCAST, STRATA_COLL_BARRIER}) {
    EXPECT_NE(caps.collective_mask & STRATA_COLL_BIT(required), 0u) << "Required collective " << required;
  }
  EXPECT_EQ(caps.nonblocking, world_caps.nonblocking);
  EXPECT_NE(caps.features & STRATA_COMM_FEATURE_SPLIT, 0u) << "a child may be split again";
}

// allreduce SUM of i32 (1 << world rank) * (1 + i % 3): the members' bit mask, nobody else's.
void check_group_allreduce(void* child, const std::vector<int>& members, Mode mode) {
  SCOPED_TRACE(std::string("allreduce on the group ") + list(members) + ", " + mode_name(mode));
  constexpr uint64_t kCount = 1001;
  int32_t mask = 0;
  for (int m : members) mask |= int32_t{1} << m;
  Bytes send(kCount * 4), recv(kCount * 4, kGap), expected(kCount * 4);
  for (uint64_t i = 0; i < kCount; ++i) {
    put_integer(STRATA_I32, send, i, (int64_t{1} << rank()) * static_cast<int64_t>(1 + i % 3));
    put_integer(STRATA_I32, expected, i, int64_t{mask} * static_cast<int64_t>(1 + i % 3));
  }
  strata_buffer send_view = view(send, STRATA_I32), recv_view = view(recv, STRATA_I32);
  run(mode, child, [&](strata_request* req, strata_error* err) {
    return abi::allreduce(child, &send_view, &recv_view, STRATA_SUM, req, err);
  });
  EXPECT_EQ(first_difference(recv, expected, STRATA_I32), "")
      << "(each element is the sum of (1 << world rank) * (1 + i % 3) over the members "
      << list(members) << ")";
}

// allgather of {world rank, 1000 + world rank}: the members in child-rank order.
void check_group_allgather(void* child, const std::vector<int>& members, Mode mode) {
  SCOPED_TRACE(std::string("allgather on the group ") + list(members) + ", " + mode_name(mode));
  Bytes send(2 * 4), recv(2 * 4 * members.size(), kGap), expected(recv.size());
  put_integer(STRATA_I32, send, 0, rank());
  put_integer(STRATA_I32, send, 1, 1000 + rank());
  for (size_t j = 0; j < members.size(); ++j) {
    put_integer(STRATA_I32, expected, 2 * j, members[j]);
    put_integer(STRATA_I32, expected, 2 * j + 1, 1000 + members[j]);
  }
  strata_buffer send_view = view(send, STRATA_I32), recv_view = view(recv, STRATA_I32);
  run(mode, child, [&](strata_request* req, strata_error* err) {
    return abi::allgather(child, &send_view, &recv_view, req, err);
  });
  EXPECT_EQ(first_difference(recv, expected, STRATA_I32), "")
      << "(block j holds the world rank of child rank j; expected " << list(members) << ")";
}

// An allreduce over the whole world on `parent`, which every rank calls between its group's
// collectives: the parent works while children exist, and the groups' traffic stays apart.
void check_parent_allreduce(void* parent) {
  SCOPED_TRACE("allreduce on the parent between the children's collectives");
  Bytes send = rank_input(STRATA_F32, rank(), 7), recv(send.size());
  strata_buffer send_view = view(send, STRATA_F32), recv_view = view(recv, STRATA_F32);
  run(Mode::Blocking, parent, [&](strata_request* req, strata_error* err) {
    return abi::allreduce(parent, &send_view, &recv_view, STRATA_SUM, req, err);
  });
  EXPECT_EQ(first_difference(recv, expected_reduction(STRATA_F32, STRATA_SUM, world(), 7),
                             STRATA_F32),
            "");
}

// The group's caps, then an allreduce and an allgather on it with the parent's allreduce between:
// with `gather_first` the allgather goes first, so that sibling groups run different collectives
// at the same time. A rank without a child (members empty) makes only the parent's call.
void check_group(void* child, const std::vector<int>& members, void* parent, Mode mode,
                 bool gather_first) {
  if (members.empty()) {
    EXPECT_EQ(child, nullptr);
    check_parent_allreduce(parent);
    return;
  }
  ASSERT_NE(child, nullptr);
  check_child_caps(child, members);
  if (gather_first) {
    check_group_allgather(child, members, mode);
  } else {
    check_group_allreduce(child, members, mode);
  }
  check_parent_allreduce(parent);
  if (gather_first) {
    check_group_allreduce(child, members, mode);
  } else {
    check_group_allgather(child, members, mode);
  }
}

std::vector<int> colors_by(const std::function<int(int)>& f, const std::vector<int>& parent) {
  std::vector<int> v;
  for (size_t i = 0; i < parent.size(); ++i) v.push_back(f(static_cast<int>(i)));
  return v;
}

// Colors even / odd, key the rank: the evens run allreduce then allgather while the odds run
// allgather then allreduce; on every instance of the suite.
TEST(Split, EvenAndOddRanks) {
  REQUIRE_SPLIT();
  const std::vector<int> world_ranks = world_members();
  const auto colors = colors_by([](int r) { return r % 2; }, world_ranks);
  const auto keys = colors_by([](int r) { return r; }, world_ranks);
  const std::vector<int> members = members_of(world_ranks, colors, keys, rank());
  const std::pair<const char*, void*> instances[] = {{"default", instance()},
                                                     {"chunked", chunked_instance()},
                                                     {"shm", shm_instance()},
                                                     {"mpi", mpi_instance()}};
  for (const auto& [name, parent] : instances) {
    SCOPED_TRACE(std::string(name) + " instance, members " + list(members));
    Child child = split(parent, rank() % 2, rank());
    for (Mode mode : modes()) check_group(child.get(), members, parent, mode, rank() % 2 == 1);
  }
}

// One group whose key reverses the order (child rank = world - 1 - rank), and one whose keys tie
// (all 0: ordered by rank here).
TEST(Split, KeyOrdersTheChildRanks) {
  REQUIRE_SPLIT();
  const std::vector<int> world_ranks = world_members();
  {
    SCOPED_TRACE("key world - rank");
    const auto keys = colors_by([&](int r) { return world() - r; }, world_ranks);
    const std::vector<int> members =
        members_of(world_ranks, std::vector<int>(world(), 0), keys, rank());
    ASSERT_EQ(members.front(), world() - 1);
    Child child = split(instance(), 0, world() - rank());
    for (Mode mode : modes()) check_group(child.get(), members, instance(), mode, false);
  }
  {
    SCOPED_TRACE("colors even/odd, keys reversed within each");
    const auto colors = colors_by([](int r) { return 5 + r % 2; }, world_ranks);
    const auto keys = colors_by([&](int r) { return 100 - r; }, world_ranks);
    const std::vector<int> members = members_of(world_ranks, colors, keys, rank());
    Child child = split(instance(), 5 + rank() % 2, 100 - rank());
    check_group(child.get(), members, instance(), Mode::Blocking, rank() % 2 == 0);
  }
  {
    SCOPED_TRACE("keys all 0: ties by rank");
    Child child = split(instance(), 0, 0);
    check_group(child.get(), world_ranks, instance(), Mode::Blocking, false);
  }
}

// The last rank passes STRATA_COMM_SPLIT_NONE: it gets NULL, the others a group without it.
TEST(Split, NoneGivesNoChild) {
  REQUIRE_SPLIT();
  const std::vector<int> world_ranks = world_members();
  const auto colors = colors_by(
      [&](int r) { return r == world() - 1 ? STRATA_COMM_SPLIT_NONE : 3; }, world_ranks);
  const auto keys = colors_by([](int r) { return r; }, world_ranks);
  const std::vector<int> members = members_of(world_ranks, colors, keys, rank());
  Child child = split(instance(), colors[rank()], rank());
  EXPECT_EQ(child.get() == nullptr, rank() == world() - 1);
  for (Mode mode : modes()) check_group(child.get(), members, instance(), mode, false);
}

// A child split again (by its own rank's parity, key reversed): the grandchild's members, ranks
// and collectives; destroyed grandchild first, then child.
TEST(Split, ChildSplitAgain) {
  REQUIRE_SPLIT();
  const std::vector<int> world_ranks = world_members();
  // First level: everyone, reversed.
  const auto keys1 = colors_by([&](int r) { return world() - r; }, world_ranks);
  const std::vector<int> level1 =
      members_of(world_ranks, std::vector<int>(world(), 0), keys1, rank());
  Child child = split(instance(), 0, world() - rank());
  ASSERT_NE(child.get(), nullptr);
  // Second level, in the child's rank order: color child rank % 2, key -child rank.
  const auto colors2 = colors_by([](int c) { return c % 2; }, level1);
  const auto keys2 = colors_by([](int c) { return 10 - c; }, level1);
  const std::vector<int> level2 = members_of(level1, colors2, keys2, rank());
  const int my_child_rank = index_of(level1, rank());
  Child grandchild = split(child.get(), my_child_rank % 2, 10 - my_child_rank);
  for (Mode mode : modes()) {
    check_group(grandchild.get(), level2, child.get(), mode, my_child_rank % 2 == 1);
  }
  grandchild.reset();
  // The child still works after its own child is gone.
  check_group(child.get(), level1, instance(), Mode::Blocking, false);
}

// A fresh parent instance: split, use the child, destroy the child, then the parent still works,
// then destroy the parent.
TEST(Split, ChildDestroyedBeforeParent) {
  REQUIRE_SPLIT();
  strata_error err = sdk::make_error();
  void* parent = nullptr;
  ASSERT_EQ(abi::create(backend().default_config, &parent, &err), STRATA_OK) << err.message;
  {
    const std::vector<int> world_ranks = world_members();
    const auto colors = colors_by([](int r) { return r / 2; }, world_ranks);
    const auto keys = colors_by([](int r) { return r; }, world_ranks);
    const std::vector<int> members = members_of(world_ranks, colors, keys, rank());
    Child child = split(parent, rank() / 2, rank());
    check_group(child.get(), members, parent, Mode::Blocking, false);
  }  // child destroyed here
  check_parent_allreduce(parent);
  ops().destroy(parent);
}

// alltoallv on a child (both features needed): uneven blocks by child rank, payload by world rank.
TEST(Split, AlltoallvOnAChild) {
  REQUIRE_SPLIT();
  REQUIRE_ALLTOALLV();
  const std::vector<int> world_ranks = world_members();
  const auto colors = colors_by([](int r) { return r % 2; }, world_ranks);
  const auto keys = colors_by([&](int r) { return world() - r; }, world_ranks);
  const std::vector<int> members = members_of(world_ranks, colors, keys, rank());
  Child child = split(instance(), rank() % 2, world() - rank());
  ASSERT_NE(child.get(), nullptr);
  const strata_comm_caps caps = caps_of(child.get());
  EXPECT_NE(caps.collective_mask & STRATA_COLL_BIT(STRATA_COLL_ALLTOALLV), 0u);
  const int me = index_of(members, rank());
  for (Mode mode : modes())
    for (int32_t dtype : {STRATA_BF16, STRATA_I64})
      for (uint64_t scale : kScales) check_alltoallv(child.get(), members, me, dtype, mode, scale);
}

// Bad arguments, refused before anything is communicated (every rank makes the same calls).
TEST(Split, BadArguments) {
  REQUIRE_SPLIT();
  strata_error err = sdk::make_error();
  strata_comm_split_args args{};
  args.struct_size = sizeof args;
  void* child = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(split_fn()(instance(), nullptr, &child, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("args is NULL"), std::string::npos) << err.message;
  EXPECT_EQ(child, nullptr) << "a refused split must leave *child NULL";
  EXPECT_EQ(split_fn()(instance(), &args, nullptr, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("child is NULL"), std::string::npos) << err.message;
  args.color = -2;
  child = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(split_fn()(instance(), &args, &child, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("color (-2)"), std::string::npos) << err.message;
  EXPECT_EQ(child, nullptr);
  args.color = 0;
  args.struct_size = offsetof(strata_comm_split_args, key);
  EXPECT_EQ(split_fn()(instance(), &args, &child, &err), STRATA_ERR_ABI);
  EXPECT_NE(std::string(err.message).find("struct_size"), std::string::npos) << err.message;
  args.struct_size = sizeof args;
  EXPECT_EQ(split_fn()(nullptr, &args, &child, &err), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err.message).find("self is NULL"), std::string::npos) << err.message;
  // The instance still splits afterwards.
  Child fine = split(instance(), 0, rank());
  check_group(fine.get(), world_members(), instance(), Mode::Blocking, false);
}

}  // namespace
}  // namespace strata::test::comm
