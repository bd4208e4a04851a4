#include "direct_allreduce.hpp"

#include "unbound_slots.hpp"

#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace strata::allreduce_gloo {
namespace {

// Rank r's block: elements [begin(r), begin(r + 1)); the first count % n blocks one longer.
struct Blocks {
  size_t count;
  size_t ranks;
  size_t begin(size_t r) const { return r * (count / ranks) + std::min(r, count % ranks); }
  size_t length(size_t r) const { return begin(r + 1) - begin(r); }
  size_t widest() const { return count / ranks + (count % ranks != 0 ? 1 : 0); }
};

void wait_all(gloo::transport::UnboundBuffer& buffer, int receives, int sends,
              std::chrono::milliseconds timeout, const char* step) {
  for (int i = 0; i < receives; ++i) {
    if (!buffer.waitRecv(timeout)) throw_aborted(std::string("direct allreduce: a ") + step + " receive");
  }
  for (int i = 0; i < sends; ++i) {
    if (!buffer.waitSend(timeout)) throw_aborted(std::string("direct allreduce: a ") + step + " send");
  }
}

// 2 ranks: one exchange of the whole buffer, then rank 0's op rank 1's on both.
void exchange_whole(gloo::Context& context, void* data, size_t count, size_t element_size,
                    const ReduceFn& fn, void* scratch, std::chrono::milliseconds timeout) {
  const int peer = 1 - context.rank;
  const size_t bytes = count * element_size;
  const uint64_t slot = gloo::Slot::build(kDirectAllreduceSlotPrefix, 0);
  auto outgoing = context.createUnboundBuffer(data, bytes);
  auto incoming = context.createUnboundBuffer(scratch, bytes);
  incoming->recv(peer, slot, 0, bytes);
  outgoing->send(peer, slot, 0, bytes);
  wait_all(*incoming, 1, 0, timeout, "whole-buffer");
  wait_all(*outgoing, 0, 1, timeout, "whole-buffer");
  if (context.rank == 0) {
    fn(data, data, scratch, count);
  } else {
    fn(data, scratch, data, count);
  }
}

}  // namespace

size_t direct_allreduce_scratch_bytes(int ranks, size_t count, size_t element_size) {
  if (ranks <= 2) return count * element_size;
  const Blocks blocks{count, static_cast<size_t>(ranks)};
  return static_cast<size_t>(ranks) * blocks.widest() * element_size;
}

void direct_allreduce(gloo::Context& context, void* data, size_t count, size_t element_size,
                      const ReduceFn& fn, void* scratch, std::chrono::milliseconds timeout) {
  if (context.size == 1 || count == 0) return;
  if (context.size == 2) return exchange_whole(context, data, count, element_size, fn, scratch, timeout);
  const auto n = static_cast<size_t>(context.size);
  const auto me = static_cast<size_t>(context.rank);
  const Blocks blocks{count, n};
  const size_t widest_bytes = blocks.widest() * element_size;
  const size_t mine_bytes = blocks.length(me) * element_size;
  auto* bytes = static_cast<char*>(data);
  auto* copies = static_cast<char*>(scratch);  // copy r of this rank's block at r * widest_bytes
  const uint64_t scatter_slot = gloo::Slot::build(kDirectAllreduceSlotPrefix, 1);
  const uint64_t gather_slot = gloo::Slot::build(kDirectAllreduceSlotPrefix, 2);
  auto whole = context.createUnboundBuffer(data, count * element_size);
  auto incoming = context.createUnboundBuffer(scratch, n * widest_bytes);
  // Both rounds' receives are posted first, so that the peers learn early where each goes. A
  // peer's folded block lands in `data` only after that peer has received this rank's copy of it,
  // so it cannot overwrite a block that is still being sent.
  int scatter_receives = 0, gather_receives = 0, scatter_sends = 0;
  for (size_t p = 0; p < n; ++p) {
    if (p == me) continue;
    const int peer = static_cast<int>(p);
    if (mine_bytes > 0) {
      incoming->recv(peer, scatter_slot, p * widest_bytes, mine_bytes);
      ++scatter_receives;
    }
    if (blocks.length(p) > 0) {
      whole->recv(peer, gather_slot, blocks.begin(p) * element_size, blocks.length(p) * element_size);
      ++gather_receives;
    }
  }
  for (size_t p = 0; p < n; ++p) {
    if (p == me || blocks.length(p) == 0) continue;
    whole->send(static_cast<int>(p), scatter_slot, blocks.begin(p) * element_size,
                blocks.length(p) * element_size);
    ++scatter_sends;
  }
  char* mine = bytes + blocks.begin(me) * element_size;
  if (mine_bytes > 0) std::memcpy(copies + me * widest_bytes, mine, mine_bytes);
  wait_all(*incoming, scatter_receives, 0, timeout, "reduce-scatter");
  wait_all(*whole, 0, scatter_sends, timeout, "reduce-scatter");
  if (mine_bytes > 0) {
    // In rank order, whichever rank folds: copy 0 op copy 1 op ... op copy n - 1.
    const size_t length = blocks.length(me);
    fn(mine, copies, copies + widest_bytes, length);
    for (size_t r = 2; r < n; ++r) fn(mine, mine, copies + r * widest_bytes, length);
    for (size_t p = 0; p < n; ++p) {
      if (p != me) whole->send(static_cast<int>(p), gather_slot, blocks.begin(me) * element_size, mine_bytes);
    }
  }
  wait_all(*whole, gather_receives, mine_bytes > 0 ? static_cast<int>(n) - 1 : 0, timeout, "allgather");
}

}  // namespace strata::allreduce_gloo
