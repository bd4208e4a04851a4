// The conformance tests' backend: allreduce-gloo under strata-run (RANK, MASTER_ADDR, ... set by
// the launcher). Gloo has no chunking and no shared-memory path, so the four instances are other
// variants: chunked_instance() is hierarchical (reduce within the host, allreduce across hosts,
// broadcast within the host; with CROSS_RANK set per rank a single machine plays several hosts),
// shm_instance() uses the bcube algorithm and mpi_instance() is hierarchical with bcube.
#include "comm_backend.hpp"

namespace strata::test::comm {

const Backend& backend() {
  static const Backend b{STRATA_ALLREDUCE_GLOO_PLUGIN,
                         "{}",
                         R"({"hierarchical": true})",
                         R"({"algorithm": "bcube"})",
                         R"({"hierarchical": true, "algorithm": "bcube"})",
                         "RANK",
                         false};
  return b;
}

}  // namespace strata::test::comm
