// strata_common/highway_slot.hpp — where a kernel set of strata_common/cpu_isa.hpp sits in a
// Highway dispatch table (HWY_EXPORT / HWY_DISPATCH_TABLE), so that a plugin calls the set it chose
// for an instance instead of the process-wide target HWY_DYNAMIC_DISPATCH follows.
//
// Header-only and in an unnamed namespace on purpose: the slot depends on the HWY_TARGETS the
// including file was compiled with (plugins may differ in HWY_DISABLED_TARGETS), so each file gets
// its own copy, evaluated there. Include it from the file that holds the HWY_EXPORTs. avx512 is
// Highway's AVX3 target in every plugin (Highway 1.0.3 builds AVX3_DL only on request).
#pragma once

#include <hwy/targets.h>

#include <cstddef>
#include <cstdint>
#include <strata/plugin.hpp>
#include <strata_common/cpu_isa.hpp>
#include <string>

namespace strata::common::cpu {
namespace {

// The Highway target a set runs.
inline int64_t highway_target(Isa isa) {
  switch (isa) {
    case Isa::avx512:
      return HWY_AVX3;
    case Isa::avx2:
      return HWY_AVX2;
    case Isa::scalar:
      break;
  }
  return (HWY_STATIC_TARGET & (HWY_EMU128 | HWY_SCALAR)) ? HWY_STATIC_TARGET : HWY_EMU128;
}

// The slot HWY_DYNAMIC_DISPATCH would call if the set's target were the process's chosen target:
// Highway's own mapping (ChosenTarget::GetIndex, evaluated against the including file's
// HWY_TARGETS), on a ChosenTarget of our own rather than the process-wide one. A target the file
// did not compile maps to the portable slot: callers compare the target the slot's code reports
// (HWY_TARGET, through an exported function) with highway_target() and refuse a mismatch.
inline std::size_t highway_slot(Isa isa) {
  hwy::ChosenTarget chosen;
  chosen.Update(highway_target(isa));
  return chosen.GetIndex();
}

// Fails (STRATA_ERR_INTERNAL) when the code at a set's slot reports another target than the set's
// (`reported`: HWY_TARGET, returned by an exported function): this build did not compile it.
// `kernels` names them for the message, e.g. "strata_amp's kernels".
inline void check_target(Isa isa, int64_t reported, const std::string& kernels) {
  if (reported == highway_target(isa)) return;
  sdk::fail(STRATA_ERR_INTERNAL, kernels + ": the " + isa_name(isa) +
                                     " set was not compiled (Highway target " +
                                     hwy::TargetName(highway_target(isa)) + " missing; got " +
                                     hwy::TargetName(reported) + ")");
}

// One `Set` per instruction set, made by make(isa) on first use (after the caller's choose_isa
// has checked that the CPU runs it) and kept for the process: what kernels_for(isa) returns.
template <class Set, class Make>
const Set& set_per_isa(Isa isa, Make make) {
  switch (isa) {
    case Isa::avx512: {
      static const Set set = make(Isa::avx512);
      return set;
    }
    case Isa::avx2: {
      static const Set set = make(Isa::avx2);
      return set;
    }
    case Isa::scalar:
      break;
  }
  static const Set set = make(Isa::scalar);
  return set;
}

}  // namespace
}  // namespace strata::common::cpu
