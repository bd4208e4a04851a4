#include "validate.hpp"

#include <climits>
#include <string>

namespace strata::allreduce_mpi {

int to_mpi_count(const char* call, const char* name, uint64_t count) {
  if (count > static_cast<uint64_t>(INT_MAX)) {
    sdk::comm::invalid_argument(call, std::string(name) + " (" + std::to_string(count) +
                                          ") exceeds the MPI count limit " +
                                          std::to_string(INT_MAX));
  }
  return static_cast<int>(count);
}

}  // namespace strata::allreduce_mpi
