// Which instruction set the shared-memory reduction kernels (shm_kernels.cpp) run with: the best
// this CPU has, or the one the STRATA_COMM_ISA environment variable (scalar | avx2 | avx512)
// forces. The sets are Highway's targets: scalar = EMU128 (portable C++), avx2 = AVX2,
// avx512 = AVX3. Chosen per instance; the process-wide Highway dispatch target is never touched.
#pragma once

#include <string>

namespace strata::allreduce_mpi::shm {

enum class Isa { scalar, avx2, avx512 };

const char* isa_name(Isa isa);

// Whether this CPU (and OS) can run the set: every extension Highway compiles its target for.
bool isa_available(Isa isa);

// The extensions the set needs that this CPU lacks, space-separated ("" when available).
std::string missing_features(Isa isa);

// `forced` is STRATA_COMM_ISA's value (NULL or empty: the best available). Throws sdk::Error:
// STRATA_ERR_INVALID_ARGUMENT for an unknown name, STRATA_ERR_UNSUPPORTED for a set this CPU
// cannot run.
Isa select_isa(const char* forced);

}  // namespace strata::allreduce_mpi::shm
