// ABI 1.10's optional comm members, run only where the caps offer them (check_comm records a
// "not offered" skip otherwise): alltoallv against the local reference, and split into two halves
// with an allreduce on each.
#include "comm_checks.hpp"

#include <strata/plugin.hpp>

#include <algorithm>

namespace strata::plugin_check::comm {
namespace {

// Elements rank `from` sends to rank `to`: uneven, with zeros (rank 1 sends nothing, rank 2
// receives nothing, and some other pairs are empty); scale 0: every block empty.
uint64_t pair_count(int from, int to, uint64_t scale) {
  if (from == 1 || to == 2) return 0;
  return static_cast<uint64_t>((7 * from + 3 * to + 1) % 5) * scale;
}

// Where in rank `from`'s input the block for rank `to` starts: blocks for different ranks differ.
uint64_t block_first(int to) { return static_cast<uint64_t>(to) * 100003u; }

}  // namespace

// Send blocks in reverse rank order one element apart; receive blocks in reverse rank order with
// r + 1 elements before rank r's and 2 after the last: the gaps must keep kUntouched.
Verdict check_alltoallv(const Session& s, int32_t dtype) {
  FirstDifference diff;
  const size_t element = sdk::dtype_size(dtype);
  const int world = s.size(), me = s.rank();
  for (uint64_t scale : {uint64_t{0}, uint64_t{1}, uint64_t{37}}) {
    std::vector<uint64_t> send_counts(world), send_displs(world), recv_counts(world),
        recv_displs(world);
    uint64_t send_total = 0, recv_total = 0;
    for (int r = world - 1; r >= 0; --r) {
      send_counts[r] = pair_count(me, r, scale);
      send_displs[r] = send_total + 1;
      send_total = send_displs[r] + send_counts[r];
      recv_counts[r] = pair_count(r, me, scale);
      recv_displs[r] = recv_total + static_cast<uint64_t>(r) + 1;
      recv_total = recv_displs[r] + recv_counts[r];
    }
    send_total += 1;
    recv_total += 2;
    Bytes input(send_total * element, kUntouched), expected(recv_total * element, kUntouched);
    for (int r = 0; r < world; ++r) {
      const Bytes out = rank_input(dtype, me, send_counts[r], block_first(r));
      std::copy(out.begin(), out.end(), input.begin() + send_displs[r] * element);
      const Bytes in = rank_input(dtype, r, recv_counts[r], block_first(me));
      std::copy(in.begin(), in.end(), expected.begin() + recv_displs[r] * element);
    }
    for (Mode mode : s.modes()) {
      Bytes send = input, recv(expected.size(), kUntouched);
      CallBuffers b = s.buffers();
      const strata_buffer send_view = b.view(send, dtype), recv_view = b.view(recv, dtype);
      strata_coll_args args = coll_args(&send_view, &recv_view);
      args.send_counts = send_counts.data();
      args.send_displs = send_displs.data();
      args.recv_counts = recv_counts.data();
      args.displs = recv_displs.data();
      const CallResult result = s.run(STRATA_COLL_ALLTOALLV, args, mode, b);
      compare(diff, "block scale " + std::to_string(scale) + ", " + mode_name(mode), result, recv,
              expected, dtype, [&](uint64_t i) {
                for (int r = 0; r < world; ++r) {
                  if (i >= recv_displs[r] && i < recv_displs[r] + recv_counts[r]) {
                    return " (rank " + std::to_string(r) + "'s block)";
                  }
                }
                return std::string(" (a gap between the blocks: must stay untouched)");
              });
    }
  }
  return diff.verdict();
}

namespace {

// An instance split() made, destroyed with this object.
class Child {
 public:
  Child(const Session& parent, void* self) : ops_(parent.fns.ops), self_(self) {}
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (self_ != nullptr) ops_->destroy(self_);
  }
  void* get() const { return self_; }

 private:
  const strata_comm_ops* ops_;
  void* self_;
};

// split(color, key) on `s`; *child is preset to a non-NULL value, so a NULL is the plugin's.
CallResult split(const Session& s, int32_t color, int32_t key, void** child) {
  strata_comm_split_args args{};
  args.struct_size = sizeof(args);
  args.color = color;
  args.key = key;
  *child = reinterpret_cast<void*>(0x1);
  strata_error err = sdk::make_error();
  const strata_status status = s.fns.split()(s.self, &args, child, &err);
  if (status != STRATA_OK) *child = nullptr;
  if (status == STRATA_OK && *child == reinterpret_cast<void*>(0x1)) {
    *child = nullptr;
    return {STRATA_ERR_INTERNAL, "returned STRATA_OK without writing *child"};
  }
  return {status, status == STRATA_OK ? std::string() : std::string(err.message)};
}

// On the child of the ranks [first, first + size): its caps say rank - first of size, and an
// allreduce SUM of (rank + 1 + i % 2) gives the sum over those ranks only.
void check_group(const Session& s, FirstDifference& diff, const std::string& what, void* child,
                 int first, int size) {
  Session c = s;
  c.self = child;
  c.caps = {};
  c.caps.struct_size = sizeof(c.caps);
  strata_error err = sdk::make_error();
  const strata_status queried = s.fns.ops->query(child, &c.caps, &err);
  if (queried != STRATA_OK) {
    diff.note(what + ": query on the child returned " + CallResult{queried, err.message}.text());
    return;
  }
  if (c.caps.rank != s.rank() - first || c.caps.size != size) {
    diff.note(what + ": the child's caps say rank " + std::to_string(c.caps.rank) + " of " +
              std::to_string(c.caps.size) + ", expected " + std::to_string(s.rank() - first) +
              " of " + std::to_string(size));
    return;
  }
  const int32_t dtype = s.primary_dtype();
  constexpr uint64_t kCount = 1001;
  int64_t base = 0;
  for (int r = first; r < first + size; ++r) base += r + 1;
  Bytes send(kCount * sdk::dtype_size(dtype)), expected(send.size());
  for (uint64_t i = 0; i < kCount; ++i) {
    put_value(dtype, send, i, static_cast<double>(s.rank() + 1 + static_cast<int>(i % 2)));
    put_value(dtype, expected, i, static_cast<double>(base + size * static_cast<int64_t>(i % 2)));
  }
  for (Mode mode : c.modes()) {
    Bytes in = send, recv(send.size(), kUntouched);
    CallBuffers b = c.buffers();
    const strata_buffer send_view = b.view(in, dtype), recv_view = b.view(recv, dtype);
    strata_coll_args args = coll_args(&send_view, &recv_view);
    args.op = STRATA_SUM;
    const CallResult result = c.run(STRATA_COLL_ALLREDUCE, args, mode, b);
    compare(diff, what + ", allreduce sum of (rank + 1 + i % 2) on the child, " + mode_name(mode),
            result, recv, expected, dtype);
  }
}

}  // namespace

Verdict check_split(const Session& s) {
  if (s.primary_dtype() < 0) return Verdict::skip("the caps claim no dtype");
  FirstDifference diff;
  const int world = s.size(), me = s.rank(), half = world / 2;
  {
    // Two halves: [0, half) and [half, world); key the rank.
    const bool low = me < half;
    const std::string what = "split into ranks [0, " + std::to_string(half) + ") and [" +
                             std::to_string(half) + ", " + std::to_string(world) + ")";
    void* raw = nullptr;
    const CallResult result = split(s, low ? 0 : 1, me, &raw);
    Child child(s, raw);
    if (!result.ok()) {
      diff.note(what + ": returned " + result.text());
    } else if (raw == nullptr) {
      diff.note(what + ": gave no child");
    } else {
      check_group(s, diff, what, raw, low ? 0 : half, low ? half : world - half);
    }
  }  // destroyed before the parent's next call
  {
    // The last rank passes STRATA_COMM_SPLIT_NONE, the others one color; keys tie (by rank).
    const bool none = me == world - 1;
    const std::string what = "split with rank " + std::to_string(world - 1) +
                             " passing STRATA_COMM_SPLIT_NONE";
    void* raw = nullptr;
    const CallResult result = split(s, none ? STRATA_COMM_SPLIT_NONE : 0, 0, &raw);
    Child child(s, raw);
    if (!result.ok()) {
      diff.note(what + ": returned " + result.text());
    } else if (none && raw != nullptr) {
      diff.note(what + ": this rank passed STRATA_COMM_SPLIT_NONE but got a child");
    } else if (!none && raw == nullptr) {
      diff.note(what + ": gave no child");
    } else if (!none) {
      check_group(s, diff, what, raw, 0, world - 1);
    }
  }
  return diff.verdict();
}

}  // namespace strata::plugin_check::comm
