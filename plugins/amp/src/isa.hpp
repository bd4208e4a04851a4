// Which kernel set an instance uses: the best instruction set this CPU has, or the one the
// STRATA_AMP_ISA environment variable (scalar | avx2 | avx512) forces. The sets are Highway's
// targets (kernels.cpp): scalar = EMU128 (portable C++), avx2 = AVX2, avx512 = AVX3.
#pragma once

#include <cstdint>
#include <string>

#include "kernels.hpp"

namespace strata::amp {

enum class Isa { scalar, avx2, avx512 };

const char* isa_name(Isa isa);
// Whether this CPU (and OS) can run the set: every extension Highway compiles its target for
// (avx2: SSSE3, SSE4.1/4.2, PCLMUL, AES, AVX, AVX2, BMI1/2, FMA, F16C; avx512: those and AVX512
// F/VL/DQ/BW).
bool isa_available(Isa isa);
// The set's functions, taken from Highway's dispatch tables at the slot of the set's target.
// Per instance: the process-wide target HWY_DYNAMIC_DISPATCH uses (which the offload plugin's
// STRATA_CPU_ISA sets) is neither read nor changed. Throws sdk::Error (STRATA_ERR_INTERNAL) if
// this build did not compile the target.
const Kernels& kernels_for(Isa isa);
// The Highway target bit (HWY_AVX3, HWY_AVX2, HWY_EMU128) of the code kernels_for(isa) runs, as
// reported by that code itself.
int64_t kernels_target(Isa isa);

// `forced` is the environment variable's value (NULL or empty: choose the best). Throws
// sdk::Error: STRATA_ERR_INVALID_ARGUMENT for an unknown name, STRATA_ERR_UNSUPPORTED for an
// instruction set this CPU lacks.
Isa select_isa(const char* forced);

// For logs: the relevant CPU features found, e.g. "avx2 f16c fma bmi2 avx512f ...".
std::string cpu_features();

}  // namespace strata::amp
