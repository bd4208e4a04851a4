#include "dtypes.hpp"

#include <strata/plugin.hpp>

#include <string>

namespace strata::allreduce_mpi {

MPI_Datatype transfer_type(int32_t dtype) {
  switch (dtype) {
    case STRATA_F32: return MPI_FLOAT;
    case STRATA_F16:
    case STRATA_BF16: return MPI_UINT16_T;
    case STRATA_F64: return MPI_DOUBLE;
    case STRATA_I32: return MPI_INT32_T;
    case STRATA_I64: return MPI_INT64_T;
    case STRATA_U8: return MPI_UINT8_T;
    default:
      sdk::fail(STRATA_ERR_INTERNAL, "transfer_type: unknown dtype " + std::to_string(dtype));
  }
}

MPI_Op mpi_op(int32_t op) {
  switch (op) {
    case STRATA_SUM:
    case STRATA_AVG: return MPI_SUM;
    case STRATA_MIN: return MPI_MIN;
    case STRATA_MAX: return MPI_MAX;
    default: sdk::fail(STRATA_ERR_INTERNAL, "mpi_op: unknown op " + std::to_string(op));
  }
}

}  // namespace strata::allreduce_mpi
