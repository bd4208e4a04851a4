// Which instruction set the shared-memory reduction kernels (shm_kernels.cpp) run with: the tree's
// one choice (strata_common/cpu_isa.hpp: STRATA_CPU_ISA, or the deprecated STRATA_COMM_ISA), per
// instance; the process-wide Highway dispatch target is never touched. The sets are Highway's
// targets: scalar = EMU128 (portable C++), avx2 = AVX2, avx512 = AVX3.
#pragma once

#include <strata_common/cpu_isa.hpp>

namespace strata::common::shm {

using common::cpu::Isa;
using common::cpu::isa_available;
using common::cpu::isa_name;
using common::cpu::missing_features;

// The comm plugins' old variable, still read (with a warning) when STRATA_CPU_ISA is unset.
inline constexpr const char* kLegacyIsaVariable = "STRATA_COMM_ISA";

}  // namespace strata::common::shm
