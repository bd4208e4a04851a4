#include "agreement.hpp"

#include "dtypes.hpp"
#include "unbound_slots.hpp"

#include <strata/plugin.hpp>
#include <strata_common/config_reader.hpp>

#include <gloo/allgather.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include <cstring>
#include <string>
#include <vector>

namespace strata::allreduce_gloo {
namespace {

// The header kind of a block (two_level_exchange) whose host could not gather its frames: its
// payload holds why.
constexpr int32_t kHostFailedKind = 1001;

// The call a header announces: the collective's name, or "split".
std::string call_name(const CallHeader& h) {
  return h.kind == kSplitKind ? "split" : sdk::comm::collective_name(h.kind);
}

// "local ranks 0, 1 of host 1 are ranks 2, 3": the shared-memory group names local ranks.
std::string host_ranks(const common::shm::HostGrid& grid, int host) {
  std::vector<std::string> locals, globals;
  for (int l = 0; l < grid.local; ++l) {
    locals.push_back(std::to_string(l));
    globals.push_back(std::to_string(grid.at(l, host)));
  }
  return "local ranks " + common::config::join(locals) + " of host " + std::to_string(host) +
         " are ranks " + common::config::join(globals);
}

std::string describe(const CallHeader& h) {
  std::string out = call_name(h);
  if (h.kind == kSplitKind || h.kind == STRATA_COLL_BARRIER) return out;
  // ABI 1.10's alltoallv: its counts differ between ranks (checked apart, data_movement.cpp).
  if (h.kind == STRATA_COLL_ALLTOALLV) return out + " of " + sdk::dtype_name(h.dtype);
  if (h.op >= 0) out += std::string(" ") + op_name(h.op);
  out += " of " + std::to_string(h.count) + " " + sdk::dtype_name(h.dtype);
  if (h.kind == STRATA_COLL_BROADCAST) out += " from root " + std::to_string(h.root);
  return out;
}

bool same(const CallHeader& a, const CallHeader& b) {
  return a.kind == b.kind && a.dtype == b.dtype && a.op == b.op && a.root == b.root &&
         a.count == b.count && a.digest == b.digest;
}

// Every rank sends its block (`block_bytes` at its own index in `all`, which holds one block per
// rank of `context`) to every other rank and receives theirs into their places, all at once: one
// round of latency, where Gloo's ring allgather takes size - 1 in a row.
void exchange_directly(gloo::Context& context, char* all, size_t block_bytes,
                       std::chrono::milliseconds timeout) {
  const int size = context.size;
  const int rank = context.rank;
  const uint64_t slot = gloo::Slot::build(kAgreementSlotPrefix, 0);
  auto outgoing = context.createUnboundBuffer(all + static_cast<size_t>(rank) * block_bytes,
                                              block_bytes);
  auto incoming = context.createUnboundBuffer(all, static_cast<size_t>(size) * block_bytes);
  for (int peer = 0; peer < size; ++peer) {
    if (peer != rank) {
      incoming->recv(peer, slot, static_cast<size_t>(peer) * block_bytes, block_bytes);
    }
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

// The same exchange of blocks, directly or by Gloo's ring allgather.
void exchange_blocks(const std::shared_ptr<gloo::Context>& context, char* all, size_t block_bytes,
                     bool direct, std::chrono::milliseconds timeout) {
  if (direct) return exchange_directly(*context, all, block_bytes, timeout);
  // Gloo's allgather takes a separate input.
  std::vector<char> mine(all + static_cast<size_t>(context->rank) * block_bytes,
                         all + static_cast<size_t>(context->rank + 1) * block_bytes);
  gloo::AllgatherOptions options(context);
  options.setInput(mine.data(), block_bytes);
  options.setOutput(all, static_cast<size_t>(context->size) * block_bytes);
  options.setTimeout(timeout);
  gloo::allgather(options);
}

}  // namespace

uint64_t digest(const uint64_t* values, size_t count, uint64_t seed) {
  uint64_t h = seed;
  for (size_t i = 0; i < count; ++i) {
    for (int b = 0; b < 8; ++b) h = (h ^ ((values[i] >> (8 * b)) & 0xff)) * 1099511628211ull;
  }
  return h;
}

FrameExchange world_exchange(std::shared_ptr<gloo::Context> world, bool direct,
                             std::chrono::milliseconds timeout) {
  return [world = std::move(world), direct, timeout](const Frame& mine, std::vector<Frame>& all) {
    all[static_cast<size_t>(world->rank)] = mine;
    exchange_blocks(world, reinterpret_cast<char*>(all.data()), sizeof(Frame), direct, timeout);
  };
}

FrameExchange two_level_exchange(common::shm::ShmGroup& host, std::shared_ptr<gloo::Context> cross,
                                 common::shm::HostGrid grid, bool direct,
                                 std::chrono::milliseconds timeout) {
  // The host gather's bytes per local rank and where each goes: the same for every call.
  const auto local = static_cast<size_t>(grid.local);
  std::vector<uint64_t> counts(local, sizeof(Frame)), displs(local);
  for (size_t l = 0; l < local; ++l) displs[l] = l * sizeof(Frame);
  return [&host, cross = std::move(cross), grid = std::move(grid), direct, timeout, local,
          counts = std::move(counts), displs = std::move(displs)](const Frame& mine,
                                                                  std::vector<Frame>& all) {
    const int here = cross->rank;
    // Host j's frames, by local rank, at block j: this host's gathered into its own block first.
    std::vector<Frame> by_host(static_cast<size_t>(grid.hosts) * local);
    Frame* ours = by_host.data() + static_cast<size_t>(here) * local;
    // When the shared-memory step fails (a host-mate exited or stalled), this rank still meets
    // its namesakes across hosts, with a block that says so instead of frames: they then fail at
    // once rather than wait out the timeout for frames that will not come.
    std::string failure;
    strata_status failure_code = STRATA_OK;
    try {
      host.allgatherv(&mine, ours, counts.data(), displs.data(), STRATA_U8);
    } catch (const sdk::Error& e) {
      failure_code = e.code();
      failure = e.what();
      ours[0] = Frame{};
      ours[0].header.kind = kHostFailedKind;
      failure.copy(reinterpret_cast<char*>(ours[0].payload), kFoldBytes - 1);
    }
    try {
      exchange_blocks(cross, reinterpret_cast<char*>(by_host.data()), local * sizeof(Frame),
                      direct, timeout);
    } catch (...) {
      if (failure_code == STRATA_OK) throw;  // otherwise the host's failure is the one to report
    }
    if (failure_code != STRATA_OK) {
      sdk::fail(failure_code, "gloo " + call_name(mine.header) + ": agreement within this host: " +
                                  failure + " (" + host_ranks(grid, here) + ")");
    }
    for (int j = 0; j < grid.hosts; ++j) {
      const Frame& first = by_host[static_cast<size_t>(j) * local];
      if (first.header.kind != kHostFailedKind) continue;
      const auto* text = reinterpret_cast<const char*>(first.payload);
      const std::string why(text, strnlen(text, kFoldBytes));
      sdk::fail(STRATA_ERR_COMM, "gloo " + call_name(mine.header) +
                                     ": agreement across hosts: rank " +
                                     std::to_string(grid.at(host.local_rank(), j)) +
                                     " could not gather host " + std::to_string(j) +
                                     "'s frames: " + why + " (" + host_ranks(grid, j) + ")");
    }
    for (int j = 0; j < grid.hosts; ++j) {
      for (int l = 0; l < grid.local; ++l) {
        all[static_cast<size_t>(grid.at(l, j))] = by_host[static_cast<size_t>(j) * local + l];
      }
    }
  };
}

std::vector<Frame> check_agreement(const CallHeader& mine, const void* payload,
                                   size_t payload_bytes, int ranks,
                                   const FrameExchange& exchange) {
  if (ranks == 1) return {};
  const bool fold = payload_bytes <= kFoldBytes;
  std::vector<Frame> all(static_cast<size_t>(ranks));
  Frame in{};
  in.header = mine;
  if (fold && payload_bytes > 0) std::memcpy(in.payload, payload, payload_bytes);
  exchange(in, all);
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
