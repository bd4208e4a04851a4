// allreduce, reduce_scatter, allgather, allgatherv and broadcast against the local reference, with
// their buffers in the session's memory (host, or a device: CallBuffers copies them there and
// back, so a device run compares against the same reference).
#include "comm_checks.hpp"

#include <strata/plugin.hpp>

#include <algorithm>

namespace strata::plugin_check::comm {
namespace {

constexpr const char* kOutOfPlace = "out of place";
constexpr const char* kInPlace = "in place";

// Every rank's input blocks of `counts[r]` elements, concatenated in rank order.
Bytes all_inputs(int32_t dtype, int world, uint64_t count) {
  Bytes all;
  for (int r = 0; r < world; ++r) {
    const Bytes block = rank_input(dtype, r, count);
    all.insert(all.end(), block.begin(), block.end());
  }
  return all;
}

}  // namespace

std::string where(uint64_t count, Mode mode, const char* placement) {
  std::string text = "count " + std::to_string(count) + ", " + mode_name(mode);
  if (placement != nullptr) text += std::string(", ") + placement;
  return text;
}

Verdict check_allreduce(const Session& s, int32_t dtype, int32_t op) {
  FirstDifference diff;
  for (size_t c = 0; c < std::size(kCounts); ++c) {
    const uint64_t count = kCounts[c];
    const Bytes input = rank_input(dtype, s.rank(), count);
    const Bytes expected = expected_reduction(dtype, op, s.size(), count);
    for (const auto [mode, in_place] : variants(c, s.modes())) {
      Bytes send = input, recv(in_place ? 0 : input.size(), kUntouched);
      Bytes& out = in_place ? send : recv;
      CallBuffers b = s.buffers();
      const strata_buffer send_view = b.view(send, dtype), recv_view = b.view(out, dtype);
      strata_coll_args args = coll_args(&send_view, &recv_view);
      args.op = op;
      const CallResult result = s.run(STRATA_COLL_ALLREDUCE, args, mode, b);
      compare(diff, where(count, mode, in_place ? kInPlace : kOutOfPlace), result, out, expected,
              dtype);
    }
  }
  return diff.verdict();
}

// Rank r receives the reduction of block r of everyone's send buffer; in place, send.data ==
// recv.data and the result is the first recv.count elements.
Verdict check_reduce_scatter(const Session& s, int32_t dtype, int32_t op) {
  FirstDifference diff;
  const size_t element = sdk::dtype_size(dtype);
  for (size_t c = 0; c < std::size(kCounts); ++c) {
    const uint64_t count = block_count(kCounts[c], s.size());
    const uint64_t world = static_cast<uint64_t>(s.size());
    const Bytes input = rank_input(dtype, s.rank(), count * world);
    const Bytes expected =
        expected_reduction(dtype, op, s.size(), count, count * static_cast<uint64_t>(s.rank()));
    for (const auto [mode, in_place] : variants(c, s.modes())) {
      Bytes send = input, recv(count * element, kUntouched);
      CallBuffers b = s.buffers();
      const strata_buffer send_view = b.view(send, dtype);
      const strata_buffer recv_view =
          in_place ? b.view_at(send, dtype, 0, count) : b.view(recv, dtype);
      strata_coll_args args = coll_args(&send_view, &recv_view);
      args.op = op;
      const CallResult result = s.run(STRATA_COLL_REDUCE_SCATTER, args, mode, b);
      if (in_place) recv.assign(send.begin(), send.begin() + static_cast<ptrdiff_t>(recv.size()));
      compare(diff, where(count, mode, in_place ? kInPlace : kOutOfPlace), result, recv, expected,
              dtype);
    }
  }
  return diff.verdict();
}

// Rank r's block lands at r * send.count; in place, send.data is that block of recv.
Verdict check_allgather(const Session& s, int32_t dtype) {
  FirstDifference diff;
  const size_t element = sdk::dtype_size(dtype);
  for (size_t c = 0; c < std::size(kCounts); ++c) {
    const uint64_t count = block_count(kCounts[c], s.size());
    const Bytes input = rank_input(dtype, s.rank(), count);
    const Bytes expected = all_inputs(dtype, s.size(), count);
    const uint64_t mine = count * static_cast<uint64_t>(s.rank());
    for (const auto [mode, in_place] : variants(c, s.modes())) {
      Bytes send = input, recv(expected.size(), kUntouched);
      if (in_place) std::copy(input.begin(), input.end(), recv.begin() + mine * element);
      CallBuffers b = s.buffers();
      const strata_buffer send_view =
          in_place ? b.view_at(recv, dtype, mine, count) : b.view(send, dtype);
      const strata_buffer recv_view = b.view(recv, dtype);
      const CallResult result =
          s.run(STRATA_COLL_ALLGATHER, coll_args(&send_view, &recv_view), mode, b);
      compare(diff, where(count, mode, in_place ? kInPlace : kOutOfPlace), result, recv, expected,
              dtype);
    }
  }
  return diff.verdict();
}

// Uneven blocks, rank 1 (of 2 or more) contributing none, laid out in reverse rank order with a
// gap of r + 1 elements before rank r's block and 2 after the last: the gaps must keep
// kUntouched.
Verdict check_allgatherv(const Session& s, int32_t dtype) {
  FirstDifference diff;
  const size_t element = sdk::dtype_size(dtype);
  const int world = s.size();
  for (size_t c = 0; c < std::size(kCounts); ++c) {
    const uint64_t base = block_count(kCounts[c], world);
    std::vector<uint64_t> counts(world), displs(world);
    uint64_t total = 0;
    for (int r = world - 1; r >= 0; --r) {
      counts[r] = r == 1 ? 0 : base + static_cast<uint64_t>(r);
      displs[r] = total + static_cast<uint64_t>(r) + 1;
      total = displs[r] + counts[r];
    }
    total += 2;
    Bytes expected(total * element, kUntouched);
    for (int r = 0; r < world; ++r) {
      const Bytes block = rank_input(dtype, r, counts[r]);
      std::copy(block.begin(), block.end(), expected.begin() + displs[r] * element);
    }
    const uint64_t mine = displs[s.rank()], my_count = counts[s.rank()];
    const Bytes input = rank_input(dtype, s.rank(), my_count);
    for (const auto [mode, in_place] : variants(c, s.modes())) {
      Bytes send = input, recv(expected.size(), kUntouched);
      if (in_place) std::copy(input.begin(), input.end(), recv.begin() + mine * element);
      CallBuffers b = s.buffers();
      const strata_buffer send_view =
          in_place ? b.view_at(recv, dtype, mine, my_count) : b.view(send, dtype);
      const strata_buffer recv_view = b.view(recv, dtype);
      strata_coll_args args = coll_args(&send_view, &recv_view);
      args.recv_counts = counts.data();
      args.displs = displs.data();
      const CallResult result = s.run(STRATA_COLL_ALLGATHERV, args, mode, b);
      compare(diff, "base " + where(base, mode, in_place ? kInPlace : kOutOfPlace), result, recv,
              expected, dtype, [&](uint64_t i) {
                for (int r = 0; r < world; ++r) {
                  if (i >= displs[r] && i < displs[r] + counts[r]) {
                    return " (rank " + std::to_string(r) + "'s block)";
                  }
                }
                return std::string(" (a gap between the blocks: must stay untouched)");
              });
    }
  }
  return diff.verdict();
}

// From every root in turn; always in place (args.recv). The modes take turns by root and size
// class (see variants()).
Verdict check_broadcast(const Session& s, int32_t dtype) {
  FirstDifference diff;
  const std::vector<Mode> modes = s.modes();
  for (size_t c = 0; c < std::size(kCounts); ++c) {
    const uint64_t count = kCounts[c];
    for (int root = 0; root < s.size(); ++root) {
      const Bytes expected = rank_input(dtype, root, count);
      const Mode mode = modes[(c + static_cast<size_t>(root)) % modes.size()];
      Bytes data = rank_input(dtype, s.rank(), count);
      CallBuffers b = s.buffers();
      const strata_buffer buffer = b.view(data, dtype);
      strata_coll_args args = coll_args(nullptr, &buffer);
      args.root = root;
      const CallResult result = s.run(STRATA_COLL_BROADCAST, args, mode, b);
      compare(diff, where(count, mode, nullptr) + ", root " + std::to_string(root), result, data,
              expected, dtype);
    }
  }
  return diff.verdict();
}

}  // namespace strata::plugin_check::comm
