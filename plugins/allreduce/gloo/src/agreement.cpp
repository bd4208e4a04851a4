#include "agreement.hpp"

#include "dtypes.hpp"

#include <strata/plugin.hpp>

#include <gloo/allgather.h>

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
                                   size_t payload_bytes, std::chrono::milliseconds timeout) {
  if (world->size == 1) return {};
  const bool fold = payload_bytes <= kFoldBytes;
  std::vector<Frame> all(static_cast<size_t>(world->size));
  Frame in{};
  in.header = mine;
  if (fold && payload_bytes > 0) std::memcpy(in.payload, payload, payload_bytes);
  gloo::AllgatherOptions options(world);
  options.setInput(reinterpret_cast<unsigned char*>(&in), sizeof in);
  options.setOutput(reinterpret_cast<unsigned char*>(all.data()), all.size() * sizeof in);
  options.setTimeout(timeout);
  gloo::allgather(options);
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
