#include "full_grads.hpp"

#include <cstring>

namespace strata::zero {

FullGrads::FullGrads(const sdk::Host& host, std::vector<ParamRecord>& params) {
  for (ParamRecord& p : params) {
    if (p.grad != nullptr || p.count == 0) continue;
    owned_.emplace_back(host, p.count * sdk::dtype_size(p.dtype), STRATA_MEM_GRADS);
    p.grad = owned_.back().data();
  }
}

void FullGrads::zero(const std::vector<ParamRecord>& params) {
  for (const ParamRecord& p : params) {
    if (p.count > 0 && p.grad != nullptr)
      std::memset(p.grad, 0, p.count * sdk::dtype_size(p.dtype));
  }
}

}  // namespace strata::zero
