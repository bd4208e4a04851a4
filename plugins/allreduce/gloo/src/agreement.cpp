#include "agreement.hpp"

#include "dtypes.hpp"
#include "unbound_slots.hpp"

#include <strata/plugin.hpp>

#include <gloo/allgather.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <cstring>
#include <string>
#include <vector>

namespace strata::allreduce_gloo {
namespace {

std::string describe(const CallHeader& h) {
  if (h.kind == kSplitKind) return "split";
  // ABI 1.10's alltoallv: its counts differ between ranks (checked apart, data_movement.cpp).
  if (h.kind == STRATA_COLL_ALLTOALLV) {
    return std::string("alltoallv of ") + sdk::dtype_name(h.dtype);
  }
  std::string out = sdk::comm::collective_name(h.kind);
  if (h.kind == STRATA_COLL_BARRIER) return out;
  if (h.op >= 0) out += std::string(" ") + op_name(h.op);
  out += " of " + std::to_string(h.count) + " " + sdk::dtype_name(h.dtype);
  if (h.kind == STRATA_COLL_BROADCAST) out += " from root " + std::to_string(h.root);
  return out;
}

bool same(const CallHeader& a, const CallHeader& b) {
  return a.kind == b.kind && a.dtype == b.dtype && a.op == b.op && a.root == b.root &&
         a.count == b.count && a.digest == b.digest;
}

// Every rank sends its frame to every other rank and receives theirs, all at once: one round of
// latency, where Gloo's ring allgather takes size - 1 in a row.
void exchange_directly(gloo::Context& world, const Frame& in, std::vector<Frame>& all,
                       std::chrono::milliseconds timeout) {
  const int size = world.size;
  const int rank = world.rank;
  const uint64_t slot = gloo::Slot::build(kAgreementSlotPrefix, 0);
  all[static_cast<size_t>(rank)] = in;
  auto outgoing = world.createUnboundBuffer(const_cast<Frame*>(&in), sizeof in);
  auto incoming = world.createUnboundBuffer(all.data(), all.size() * sizeof in);
  for (int peer = 0; peer < size; ++peer) {
    if (peer != rank) incoming->recv(peer, slot, static_cast<size_t>(peer) * sizeof in, sizeof in);
  }
  for (int peer = 0; peer < size; ++peer) {
    if (peer != rank) outgoing->send(peer, slot);
  }
  for (int received = 0; received < size - 1; ++received) {
    if (!incoming->waitRecv(timeout)) throw_aborted("agreement: a receive");
  }
  for (int sent = 0; sent < size - 1; ++sent) {
    if (!outgoing->waitSend(timeout)) throw_aborted("agreement: a send");
  }
}

}  // namespace

uint64_t digest(const uint64_t* values, size_t count, uint64_t seed) {
  uint64_t h = seed;
  for (size_t i = 0; i < count; ++i) {
    for (int b = 0; b < 8; ++b) h = (h ^ ((values[i] >> (8 * b)) & 0xff)) * 1099511628211ull;
  }
  return h;
}

std::vector<Frame> check_agreement(const std::shared_ptr<gloo::Context>& world,
                                   const CallHeader& mine, const void* payload,
                                   size_t payload_bytes, bool direct,
                                   std::chrono::milliseconds timeout) {
  if (world->size == 1) return {};
  const bool fold = payload_bytes <= kFoldBytes;
  std::vector<Frame> all(static_cast<size_t>(world->size));
  Frame in{};
  in.header = mine;
  if (fold && payload_bytes > 0) std::memcpy(in.payload, payload, payload_bytes);
  if (direct) {
    exchange_directly(*world, in, all, timeout);
  } else {
    gloo::AllgatherOptions options(world);
    options.setInput(reinterpret_cast<unsigned char*>(&in), sizeof in);
    options.setOutput(reinterpret_cast<unsigned char*>(all.data()), all.size() * sizeof in);
    options.setTimeout(timeout);
    gloo::allgather(options);
  }
  for (size_t r = 1; r < all.size(); ++r) {
    if (same(all[r].header, all[0].header)) continue;
    const CallHeader& first = all[0].header;
    const CallHeader& other = all[r].header;
    std::string message = "ranks disagree: rank 0 called " + describe(first) + ", rank " +
                          std::to_string(r) + " called " + describe(other);
    if (other.kind == STRATA_COLL_ALLGATHERV && describe(other) == describe(first)) {
      message += " with different recv_counts or displs";
    }
    sdk::fail(STRATA_ERR_MISMATCH, message);
  }
  if (!fold) return {};
  return all;
}

}  // namespace strata::allreduce_gloo
