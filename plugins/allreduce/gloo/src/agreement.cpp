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

void check_agreement(const std::shared_ptr<gloo::Context>& world, const CallHeader& mine,
                     std::chrono::milliseconds timeout) {
  if (world->size == 1) return;
  std::vector<CallHeader> all(static_cast<size_t>(world->size));
  CallHeader in = mine;
  gloo::AllgatherOptions options(world);
  options.setInput(reinterpret_cast<unsigned char*>(&in), sizeof in);
  options.setOutput(reinterpret_cast<unsigned char*>(all.data()), all.size() * sizeof in);
  options.setTimeout(timeout);
  gloo::allgather(options);
  for (size_t r = 1; r < all.size(); ++r) {
    if (same(all[r], all[0])) continue;
    std::string message = "ranks disagree: rank 0 called " + describe(all[0]) + ", rank " +
                          std::to_string(r) + " called " + describe(all[r]);
    if (all[r].kind == STRATA_COLL_ALLGATHERV && describe(all[r]) == describe(all[0])) {
      message += " with different recv_counts or displs";
    }
    sdk::fail(STRATA_ERR_MISMATCH, message);
  }
}

}  // namespace strata::allreduce_gloo
