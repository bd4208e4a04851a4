#include "cast.hpp"

#include <cstring>
#include <strata/plugin.hpp>
#include <string>
#include <utility>

#include "device_ops.hpp"
#include "parallel.hpp"

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
}

bool on_device(const strata_buffer& b) { return b.device.type == STRATA_DEVICE_CUDA; }

bool overlap(const strata_buffer& a, const strata_buffer& b) {
  const auto begin_a = reinterpret_cast<uintptr_t>(a.data),
             begin_b = reinterpret_cast<uintptr_t>(b.data);
  const uintptr_t end_a = begin_a + a.count * sdk::dtype_size(a.dtype);
  const uintptr_t end_b = begin_b + b.count * sdk::dtype_size(b.dtype);
  return a.count > 0 && begin_a < end_b && begin_b < end_a;
}

// Runs kernel(src + begin, dst + begin, end - begin) over pieces of the buffers.
template <class Src, class Dst>
void run(void (*kernel)(const Src*, Dst*, std::size_t), const void* src, void* dst, std::size_t n,
         unsigned threads) {
  const auto* in = static_cast<const Src*>(src);
  auto* out = static_cast<Dst*>(dst);
  // Pieces in multiples of 64 elements keep every piece's vector loop free of tails.
  parallel_for(n, threads, 64, [&](std::size_t begin, std::size_t end) {
    kernel(in + begin, out + begin, end - begin);
  });
}

void f32_to_f64(const float* src, double* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<double>(src[i]);
}
void f64_to_f32(const double* src, float* dst, std::size_t n) {
  // The hardware conversion rounds to nearest even (the default mode), overflows to inf, keeps nan.
  for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
}

}  // namespace

void cast(const strata_buffer& src, const strata_buffer& dst, const Exec& exec, void* stream) {
  check_buffer(src, "src");
  check_buffer(dst, "dst");
  if (src.count != dst.count) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "dst.count: expected " + std::to_string(src.count) +
                                               " (src.count), got " + std::to_string(dst.count));
  }
  for (const auto& [b, name] : {std::pair{&src, "src"}, std::pair{&dst, "dst"}}) {
    if (b->device.type != STRATA_DEVICE_HOST && !on_device(*b)) {
      sdk::fail(STRATA_ERR_UNSUPPORTED, std::string(name) + ".device: strata_amp casts host or "
                                                            "CUDA memory, got device type " +
                                            std::to_string(b->device.type));
    }
  }
  if (on_device(src) != on_device(dst)) {
    sdk::fail(STRATA_ERR_UNSUPPORTED,
              std::string("dst.device: strata_amp casts within host memory or within one CUDA "
                          "device, not from ") +
                  (on_device(src) ? "a device to the host" : "the host to a device"));
  }
  if (on_device(src)) return device_cast(src, dst, stream);
  const std::size_t n = src.count;
  const int32_t from = src.dtype, to = dst.dtype;
  if (from == STRATA_F32 && to == STRATA_F32) {
    if (n > 0 && src.data != dst.data) std::memmove(dst.data, src.data, n * sizeof(float));
    return;
  }
  const auto pairs_with_f32 = [](int32_t d) {
    return d == STRATA_F16 || d == STRATA_BF16 || d == STRATA_F64;
  };
  const bool supported =
      (from == STRATA_F32 && pairs_with_f32(to)) || (to == STRATA_F32 && pairs_with_f32(from));
  if (!supported) {
    sdk::fail(STRATA_ERR_UNSUPPORTED, std::string("dst.dtype: cannot cast ") +
                                          sdk::dtype_name(from) + " to " + sdk::dtype_name(to) +
                                          "; strata_amp casts between f32 and f32, f64, f16, bf16");
  }
  if (overlap(src, dst)) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              std::string("dst.data: overlaps src.data; a cast from ") + sdk::dtype_name(from) +
                  " to " + sdk::dtype_name(to) + " needs separate buffers");
  }
  const Kernels& k = *exec.kernels;
  if (from == STRATA_F32) {
    switch (to) {
      case STRATA_F16:
        return run(k.f32_to_f16, src.data, dst.data, n, exec.threads);
      case STRATA_BF16:
        return run(k.f32_to_bf16, src.data, dst.data, n, exec.threads);
      case STRATA_F64:
        return run(f32_to_f64, src.data, dst.data, n, exec.threads);
      default:
        break;
    }
  } else if (to == STRATA_F32) {
    switch (from) {
      case STRATA_F16:
        return run(k.f16_to_f32, src.data, dst.data, n, exec.threads);
      case STRATA_BF16:
        return run(k.bf16_to_f32, src.data, dst.data, n, exec.threads);
      case STRATA_F64:
        return run(f64_to_f32, src.data, dst.data, n, exec.threads);
      default:
        break;
    }
  }
  sdk::fail(STRATA_ERR_INTERNAL, "cast: unhandled dtype pair");  // excluded by `supported`
}

}  // namespace strata::amp
