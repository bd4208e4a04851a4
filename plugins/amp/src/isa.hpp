// Which kernel table an instance uses: the best instruction set this CPU has, or the one the
// STRATA_AMP_ISA environment variable (scalar | avx2 | avx512) forces.
#pragma once

#include <string>

#include "kernels.hpp"

namespace strata::amp {

enum class Isa { scalar, avx2, avx512 };

const char* isa_name(Isa isa);
// Whether this CPU (and OS) can run the table: avx2 needs AVX2 and F16C, avx512 AVX512F.
bool isa_available(Isa isa);
const Kernels& kernels_for(Isa isa);

// `forced` is the environment variable's value (NULL or empty: choose the best). Throws
// sdk::Error: STRATA_ERR_INVALID_ARGUMENT for an unknown name, STRATA_ERR_UNSUPPORTED for an
// instruction set this CPU lacks.
Isa select_isa(const char* forced);

// For logs: the relevant CPU features found, e.g. "avx2 f16c avx512f".
std::string cpu_features();

}  // namespace strata::amp
