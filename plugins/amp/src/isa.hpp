// Which kernel set an instance uses: the choice is the tree's one (strata_common/cpu_isa.hpp:
// STRATA_CPU_ISA, or the deprecated STRATA_AMP_ISA), the sets are Highway's targets compiled in
// kernels.cpp (scalar = EMU128, avx2 = AVX2, avx512 = AVX3).
#pragma once

#include <cstdint>
#include <strata_common/cpu_isa.hpp>

#include "kernels.hpp"

namespace strata::amp {

using common::cpu::cpu_features;
using common::cpu::Isa;
using common::cpu::isa_available;
using common::cpu::isa_name;

// This plugin's old variable, still read (with a warning) when STRATA_CPU_ISA is unset.
inline constexpr const char* kLegacyIsaVariable = "STRATA_AMP_ISA";

// The set's functions, taken from Highway's dispatch tables at the slot of the set's target
// (strata_common/highway_slot.hpp). Per instance: the process-wide target HWY_DYNAMIC_DISPATCH
// uses is neither read nor changed. Throws sdk::Error (STRATA_ERR_INTERNAL) if this build did not
// compile the target.
const Kernels& kernels_for(Isa isa);
// The Highway target bit (HWY_AVX3, HWY_AVX2, HWY_EMU128) of the code kernels_for(isa) runs, as
// reported by that code itself.
int64_t kernels_target(Isa isa);

}  // namespace strata::amp
