// How Strata dtypes and reduce ops map onto MPI. The plugin-neutral helpers (halves accumulate in
// f32, op names, AVG's division) are the SDK's: strata/comm/reduce_ops.hpp, half_arrays.hpp.
#pragma once

#include <mpi.h>

#include <strata/comm/half_arrays.hpp>
#include <strata/comm/reduce_ops.hpp>

#include <cstdint>

namespace strata::allreduce_mpi {

// The SDK's helpers, called unqualified. f16 and bf16 have no MPI reduction type: they are reduced
// as f32 in a scratch buffer (is_half, accumulate_dtype, half_to_f32, f32_to_half).
using namespace sdk::comm;

// The type used to move elements unchanged (halves travel as MPI_UINT16_T).
MPI_Datatype transfer_type(int32_t dtype);

// AVG is reduced as MPI_SUM and divided afterwards.
MPI_Op mpi_op(int32_t op);

}  // namespace strata::allreduce_mpi
