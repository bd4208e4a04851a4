// How Strata dtypes and reduce ops map onto MPI.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace strata::allreduce_mpi {

// f16 and bf16 have no MPI reduction type: they are reduced as f32 in a scratch buffer.
bool is_half(int32_t dtype);

// The type used to move elements unchanged (halves travel as MPI_UINT16_T).
MPI_Datatype transfer_type(int32_t dtype);

// The dtype the arithmetic is done in: f32 for halves, the dtype itself otherwise.
int32_t accumulate_dtype(int32_t dtype);

// AVG is reduced as MPI_SUM and divided afterwards.
MPI_Op mpi_op(int32_t op);
const char* op_name(int32_t op);
bool is_known_op(int32_t op);

// data[i] /= divisor for `count` elements of a non-half dtype (integers: truncating division).
void divide_in_place(void* data, size_t count, int32_t dtype, int divisor);

}  // namespace strata::allreduce_mpi
