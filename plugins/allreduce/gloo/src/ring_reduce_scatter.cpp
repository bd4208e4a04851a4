#include "ring_reduce_scatter.hpp"

#include "unbound_slots.hpp"

#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <string>

namespace strata::allreduce_gloo {

void ring_reduce_scatter(gloo::Context& context, void* all, void* scratch, size_t block_elements,
                         size_t element_size, const ReduceFn& fn, std::chrono::milliseconds timeout) {
  const int size = context.size;
  const int rank = context.rank;
  const size_t block_bytes = block_elements * element_size;
  if (size == 1 || block_bytes == 0) return;
  const int right = (rank + 1) % size;
  const int left = (rank + size - 1) % size;
  const uint64_t slot = gloo::Slot::build(kRingReduceScatterSlotPrefix, 0);
  auto* blocks = static_cast<char*>(all);
  auto outgoing = context.createUnboundBuffer(all, block_bytes * static_cast<size_t>(size));
  auto incoming = context.createUnboundBuffer(scratch, block_bytes);
  const auto block_at = [&](int step_back) {
    return static_cast<size_t>(((rank - step_back) % size + size) % size);
  };
  for (int step = 0; step < size - 1; ++step) {
    const size_t send_block = block_at(step + 1);
    const size_t fold_block = block_at(step + 2);
    incoming->recv(left, slot, 0, block_bytes);
    outgoing->send(right, slot, send_block * block_bytes, block_bytes);
    if (!incoming->waitRecv(timeout)) {
      throw_aborted("ring reduce_scatter: the receive from rank " + std::to_string(left));
    }
    char* mine = blocks + fold_block * block_bytes;
    fn(mine, mine, scratch, block_elements);
    // The next step sends the block just folded, so this one's send must be out first.
    if (!outgoing->waitSend(timeout)) {
      throw_aborted("ring reduce_scatter: the send to rank " + std::to_string(right));
    }
  }
}

}  // namespace strata::allreduce_gloo
