// The conformance tests' backend: allreduce-mpi under mpirun.
#include "comm_backend.hpp"
#include "comm_env.hpp"

#include <string>

namespace strata::test::comm {

const Backend& backend() {
  // Hierarchical too: nothing changes on one host, and across hosts (tests/multinode) the same
  // conformance checks cover the two-level allreduce, reduce_scatter and allgather, in small
  // pieces. arrival_gate_min_bytes 0: blocking calls of every size take the gated path, which is
  // the two-level one (by default those below 1 MiB run flat as MPI_I* calls).
  static const std::string chunked = "{\"chunk_bytes\": " + std::to_string(kSmallChunkBytes) +
                                     ", \"hierarchical\": true, \"arrival_gate_min_bytes\": 0}";
  static const std::string shm = "{\"shm_min_bytes\": 0, \"shm_chunk_bytes\": " +
                                 std::to_string(kSmallChunkBytes) + "}";
  static const Backend b{STRATA_ALLREDUCE_MPI_PLUGIN, "{}", chunked.c_str(), shm.c_str(),
                         R"({"shm": false})", "OMPI_COMM_WORLD_RANK", true,
                         "allreduce-mpi: rank"};
  return b;
}

}  // namespace strata::test::comm
