// Element conversions between the model dtype and fp32, through the precision stratum's cast
// (round to nearest even, inf/nan kept), or plain copies when the dtypes agree (fp32 models need
// no precision stratum at all).
#pragma once

#include "device_memory.hpp"
#include "param.hpp"

#include <strata/plugin.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace strata::zero {

class Caster {
 public:
  explicit Caster(const sdk::Host& host) : host_(host) {}

  // Throws STRATA_ERR_UNSUPPORTED (naming `who`) if converting `dtype` to and from fp32 would
  // need a precision stratum that is missing or too old. Call once at finalize.
  void require(int32_t dtype, const std::string& who) const;
  // dst[i] = src[i] converted; `count` elements. Same dtype: memcpy.
  void convert(const void* src, int32_t src_dtype, void* dst, int32_t dst_dtype,
               uint64_t count) const;
  // dst[i] (in `dtype`) += src[i]; through an fp32 scratch copy when dtype is not fp32.
  void add_into(void* dst, int32_t dtype, const float* src, uint64_t count) const;

 private:
  sdk::Host host_;
};

// Rejects a dtype no stage handles (f32, f16 and bf16 are supported), naming `who`.
void check_model_dtype(int32_t dtype, const std::string& who);
// The dtype every parameter shares (f32 for none); throws STRATA_ERR_UNSUPPORTED naming two
// parameters that differ, since one master/model conversion serves all of them.
int32_t common_dtype(const std::vector<ParamRecord>& params, int stage);

// `count` elements of `dtype` from `base`, `offset` elements in.
inline void* element_at(void* base, int32_t dtype, uint64_t offset) {
  return static_cast<char*>(base) + offset * sdk::dtype_size(dtype);
}
inline const void* element_at(const void* base, int32_t dtype, uint64_t offset) {
  return static_cast<const char*>(base) + offset * sdk::dtype_size(dtype);
}

}  // namespace strata::zero
