#include "cast.hpp"

#include <cstring>
#include <strata/plugin.hpp>
#include <string>

#include "float_convert.hpp"

namespace strata::amp {
namespace {

void check_buffer(const strata_buffer& b, const char* name) {
  const std::string where(name);
  if (b.struct_size < offsetof(strata_buffer, device) + sizeof(b.device)) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              where + ".struct_size: too small, got " + std::to_string(b.struct_size));
  }
  if (b.count > 0 && b.data == nullptr) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              where + ".data: NULL with count " + std::to_string(b.count));
  }
  if (b.device.type != STRATA_DEVICE_HOST) {
    sdk::fail(STRATA_ERR_UNSUPPORTED,
              where + ".device: only host memory can be cast by strata_amp");
  }
}

}  // namespace

void cast(const strata_buffer& src, const strata_buffer& dst) {
  check_buffer(src, "src");
  check_buffer(dst, "dst");
  if (src.count != dst.count) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "dst.count: expected " + std::to_string(src.count) +
                                               " (src.count), got " + std::to_string(dst.count));
  }
  const size_t n = src.count;
  const int32_t from = src.dtype, to = dst.dtype;
  if (from == STRATA_F32 && to == STRATA_F32) {
    if (n > 0 && src.data != dst.data) std::memmove(dst.data, src.data, n * sizeof(float));
    return;
  }
  if (from == STRATA_F32) {
    const auto* in = static_cast<const float*>(src.data);
    switch (to) {
      case STRATA_F16:
        return f32_to_f16(in, static_cast<uint16_t*>(dst.data), n);
      case STRATA_BF16:
        return f32_to_bf16(in, static_cast<uint16_t*>(dst.data), n);
      case STRATA_F64:
        return f32_to_f64(in, static_cast<double*>(dst.data), n);
      default:
        break;
    }
  } else if (to == STRATA_F32) {
    auto* out = static_cast<float*>(dst.data);
    switch (from) {
      case STRATA_F16:
        return f16_to_f32(static_cast<const uint16_t*>(src.data), out, n);
      case STRATA_BF16:
        return bf16_to_f32(static_cast<const uint16_t*>(src.data), out, n);
      case STRATA_F64:
        return f64_to_f32(static_cast<const double*>(src.data), out, n);
      default:
        break;
    }
  }
  sdk::fail(STRATA_ERR_UNSUPPORTED, std::string("dst.dtype: cannot cast ") + sdk::dtype_name(from) +
                                        " to " + sdk::dtype_name(to) +
                                        "; strata_amp casts between f32 and f32, f64, f16, bf16");
}

}  // namespace strata::amp
