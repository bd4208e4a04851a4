// The parameters a host registered, and the check that every rank registered the same ones.
#pragma once

#include "collectives.hpp"

#include <strata/plugin_api.h>

#include <cstdint>
#include <string>
#include <vector>

namespace strata::rt {

struct ParamRecord {
  std::string name;
  int32_t dtype;
  strata_device device;
  uint64_t count;
  void* data;
  void* grad;

  strata_param_desc desc() const;
  std::string signature() const;  // "'fc1.weight' f32[200704]"
  uint64_t bytes() const;
};

class ParamRegistry {
 public:
  // Validates one registration (names unique and non-empty, known dtype, host memory, non-null
  // buffers) and returns its dense index. Throws strata::rt::Error naming the parameter.
  uint32_t add(const strata_param_desc& desc);
  const std::vector<ParamRecord>& params() const { return params_; }

  // Collective. Throws STRATA_ERR_MISMATCH on every rank alike, naming the first parameter that
  // differs and the ranks, if any rank registered different names, dtypes, counts or order.
  void verify_same_on_all_ranks(const Collectives& collectives) const;

 private:
  std::vector<ParamRecord> params_;
};

}  // namespace strata::rt
