// The parameters a host registered, and the check that every rank registered the same ones.
#pragma once

#include "engine/collectives.hpp"

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
  void* data;  // NULL: deferred values, written through a gather FOR_WRITE (API 1.9)
  void* grad;  // NULL: the sharding plugin provides gradient storage (API 1.1)

  strata_param_desc desc() const;
  std::string signature() const;  // "'fc1.weight' f32[200704]"
  uint64_t bytes() const;
};

// A named set of parameters (a layer) gathered and released together.
struct GroupRecord {
  std::string name;
  std::vector<uint32_t> params;
};

class ParamRegistry {
 public:
  // Validates one registration (names unique and non-empty, known dtype, host or CUDA memory (CUDA
  // only in a build with CUDA), count > 0; data may be NULL) and returns its dense index. Throws
  // strata::rt::Error naming the parameter.
  uint32_t add(const strata_param_desc& desc);
  // Validates a group (unique non-empty name, known indices, none already grouped) and returns
  // its dense id.
  uint32_t add_group(const std::string& name, const uint32_t* params, size_t count);
  const std::vector<ParamRecord>& params() const { return params_; }
  const std::vector<GroupRecord>& groups() const { return groups_; }
  bool grouped(uint32_t index) const { return grouped_[index] != 0; }  // in some group

  // Collective. Throws STRATA_ERR_MISMATCH on every rank alike, naming the first parameter or
  // group that differs and the ranks, if any rank registered different names, dtypes, counts,
  // groups or order.
  void verify_same_on_all_ranks(const Collectives& collectives) const;

 private:
  std::vector<ParamRecord> params_;
  std::vector<GroupRecord> groups_;
  std::vector<uint8_t> grouped_;  // per parameter: already in a group
};

}  // namespace strata::rt
