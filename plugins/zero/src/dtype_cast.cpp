#include "dtype_cast.hpp"

#include <cstring>

namespace strata::zero {

void check_model_dtype(int32_t dtype, const std::string& who) {
  if (dtype != STRATA_F32 && dtype != STRATA_F16 && dtype != STRATA_BF16) {
    sdk::fail(STRATA_ERR_UNSUPPORTED,
              who + " supports f32, f16 and bf16 parameters, got " + sdk::dtype_name(dtype));
  }
}

int32_t common_dtype(const std::vector<ParamRecord>& params, int stage) {
  if (params.empty()) return STRATA_F32;
  const ParamRecord& first = params.front();
  for (const ParamRecord& p : params) {
    if (p.dtype != first.dtype) {
      sdk::fail(STRATA_ERR_UNSUPPORTED,
                "parameter " + p.name + " is " + sdk::dtype_name(p.dtype) + " but parameter " +
                    first.name + " is " + sdk::dtype_name(first.dtype) + ": sharding stage " +
                    std::to_string(stage) + " needs one model dtype for all parameters");
    }
  }
  return first.dtype;
}

void Caster::require(int32_t dtype, const std::string& who) const {
  if (dtype == STRATA_F32) return;
  const strata_precision_ops* ops = host_.precision();
  if (ops == nullptr || ops->cast == nullptr) {
    sdk::fail(STRATA_ERR_UNSUPPORTED, who + " is " + sdk::dtype_name(dtype) +
                                          ": converting it to and from the fp32 master copy "
                                          "needs a precision stratum with cast, and there is none");
  }
}

void Caster::convert(const void* src, int32_t src_dtype, void* dst, int32_t dst_dtype,
                     uint64_t count) const {
  if (count == 0) return;
  const Memory memory(host_);
  if (src_dtype == dst_dtype) {
    memory.copy(dst, src, count * sdk::dtype_size(src_dtype));
    return;
  }
  const strata_precision_ops* ops = host_.precision();
  if (ops == nullptr) {
    sdk::fail(STRATA_ERR_UNSUPPORTED, std::string("cannot convert ") + sdk::dtype_name(src_dtype) +
                                          " to " + sdk::dtype_name(dst_dtype) +
                                          " without a precision stratum");
  }
  // The ABI's buffer views are non-const; cast only reads `src`.
  const strata_buffer in = memory.buffer(const_cast<void*>(src), count, src_dtype);
  const strata_buffer out = memory.buffer(dst, count, dst_dtype);
  strata_error err = sdk::make_error();
  sdk::check(ops->cast(host_.precision_self(), &in, &out, &err), err, "precision cast");
}

void Caster::add_into(void* dst, int32_t dtype, const float* src, uint64_t count) const {
  const Memory memory(host_);
  if (dtype == STRATA_F32) {
    memory.add(static_cast<float*>(dst), src, count);
    return;
  }
  Buffer<float> wide(host_, count, STRATA_MEM_COMM_BUFFERS);
  convert(dst, dtype, wide.data(), STRATA_F32, count);
  memory.add(wide.data(), src, count);
  convert(wide.data(), STRATA_F32, dst, dtype, count);
}

}  // namespace strata::zero
