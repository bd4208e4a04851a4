// The CPU optimizer kernels: one fused pass per element (read the gradient times grad_scale,
// update the state and the fp32 master in place, optionally write the new parameter once more in
// half precision). Each call covers elements [begin, end) of one set of arrays on the calling
// thread; tiled_step.hpp spreads whole shards over a thread pool. The instruction set (AVX-512,
// AVX2 or the portable baseline) is chosen per instance at run time: kernels_for() below.
#pragma once

#include <cstddef>
#include <cstdint>
#include <strata_common/cpu_isa.hpp>
#include <strata_common/optimizer_scalars.hpp>

namespace strata::offload {

enum class HalfType : uint8_t { none, f16, bf16 };

// Where the updated parameters are written again, rounded to nearest even: element i of the
// arrays goes to element i of `data` (2 bytes each). Type none (or data NULL) writes nothing.
struct HalfCopy {
  void* data = nullptr;
  HalfType type = HalfType::none;
};

// The per-step scalars are the ones the CUDA kernels take too (strata_common/optimizer_scalars.hpp).
using common::optim::AdamScalars;
using common::optim::LionScalars;
using common::optim::SgdScalars;

// The arrays of one shard; `count` elements each.
struct AdamArrays {
  float* param;
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  std::size_t count;
  HalfCopy copy;
};
struct SgdArrays {
  float* param;
  const float* grad;
  float* momentum_buffer;  // NULL: plain SGD without momentum
  std::size_t count;
  HalfCopy copy;
};
struct LionArrays {
  float* param;
  const float* grad;
  float* exp_avg;
  std::size_t count;
  HalfCopy copy;
};

// One instruction set's kernels (strata_common/cpu_isa.hpp), taken from Highway's dispatch tables
// at the set's slot. Each call covers elements [begin, end) of `a` on the calling thread.
struct OptimizerKernels {
  void (*adam)(const AdamScalars& s, const AdamArrays& a, std::size_t begin, std::size_t end);
  void (*sgd)(const SgdScalars& s, const SgdArrays& a, std::size_t begin, std::size_t end);
  void (*lion)(const LionScalars& s, const LionArrays& a, std::size_t begin, std::size_t end);
  // dst[i] = src[i] rounded to nearest even in `type` (f16 or bf16), for i in [0, n): the same
  // conversion as the kernels' copy-out, for parameters that no step has written yet.
  void (*convert_to_half)(HalfType type, const float* src, void* dst, std::size_t n);
  // The Highway target bit (HWY_AVX3, HWY_AVX2, HWY_EMU128) of this code, as the code itself
  // reports it: the path really taken.
  int64_t target;
};

// The set's kernels. Per instance: the process-wide target HWY_DYNAMIC_DISPATCH uses is neither
// read nor changed. Throws sdk::Error (STRATA_ERR_INTERNAL) if this build did not compile the
// set's target. The caller checks first that the CPU runs the set (common::cpu::choose_isa).
const OptimizerKernels& kernels_for(common::cpu::Isa isa);

}  // namespace strata::offload
