// The element loops of the shared-memory collectives: fold n source arrays into a destination.
// shm_kernels.cpp compiles them once per instruction set with Highway; the plugin picks the set per
// instance (shm_isa.hpp). Every set gives the same bits as scalar_reference() (shm_reference.hpp
// states the rules), which are also the bits the MPI path computes, so the path taken never
// changes a number.
#pragma once

#include <strata/plugin_api.h>

#include <cstddef>
#include <cstdint>

#include "shm_isa.hpp"

namespace strata::common::shm {

struct ReduceArgs {
  const void* const* sources;  // n_sources arrays of `count` elements of `dtype`, folded in order
  int n_sources;               // >= 1
  void* out;                   // count elements of dtype; may be the same pointer as any sources[k]
  void* out2;                  // nullptr, or a second destination that receives the same values
  size_t count;
  int32_t dtype;               // STRATA_F32, _F16, _BF16, _F64, _I32, _I64, _U8
  int32_t op;                  // STRATA_SUM, STRATA_AVG, STRATA_MIN, STRATA_MAX
  int divisor;                 // AVG: the world size (no division when <= 1); ignored otherwise
};

struct Kernels {
  // Throws sdk::Error (STRATA_ERR_INTERNAL) for an unknown dtype or op or n_sources < 1.
  void (*reduce)(const ReduceArgs&);
};

// The set's functions, taken from Highway's dispatch tables at the slot of the set's target.
// Throws sdk::Error (STRATA_ERR_INTERNAL) if this build did not compile the target.
const Kernels& kernels_for(Isa isa);

// Plain C++, one element at a time: the definition every set must match bit for bit.
const Kernels& scalar_reference();

}  // namespace strata::common::shm
