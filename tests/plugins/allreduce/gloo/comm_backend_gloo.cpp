// The conformance tests' backend: allreduce-gloo under strata-run (RANK, MASTER_ADDR, ... set by
// the launcher). As for allreduce-mpi, instance() is the default (shared memory when every rank
// runs on one host), shm_instance() has tiny shared-memory rounds and mpi_instance() is Gloo's TCP
// pairs only ({"shm": false}, with the ring algorithm and the ring agreement: the default "auto"
// takes the direct allreduce at 2 ranks below 1 MiB, bcube below 2 MiB and the direct agreement
// up to 16 ranks, so that each is covered; gloo_job_test.cpp's
// Gloo.DirectAllreduceFoldsInRankOrder takes the direct allreduce at every size and rank count);
// chunked_instance() is hierarchical: across hosts in two levels, in pieces of kSmallChunkBytes (a
// shared-memory group per host, every local rank allreducing its slice across hosts) where the
// hosts hold the same number of ranks, else through each host's first rank; on one host the
// default's path. With CROSS_RANK set per rank a single machine plays several hosts, and the
// job-wide shared memory is then off for every instance.
//
// STRATA_TEST_GLOO_TCP=1 turns shared memory off in every instance, so that the conformance suite
// runs over TCP on one host (the hierarchical instance: reduce within the host, broadcast within
// the host; the shared-memory tests, Shm*, are then left out by the test's filter).
#include "comm_backend.hpp"
#include "comm_env.hpp"

#include <cstdlib>
#include <cstring>
#include <string>

namespace strata::test::comm {

const Backend& backend() {
  static const bool tcp_only = [] {
    const char* v = std::getenv("STRATA_TEST_GLOO_TCP");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  static const std::string shm = "{\"shm_min_bytes\": 0, \"shm_chunk_bytes\": " +
                                 std::to_string(kSmallChunkBytes) +
                                 (tcp_only ? ", \"shm\": false}" : "}");
  // The two-level collectives in small pieces (chunk_bytes), as allreduce-mpi's chunked
  // instance: several pieces per call, and a last one with a tail of fewer than L elements.
  static const std::string hierarchical = "{\"hierarchical\": true, \"chunk_bytes\": " +
                                          std::to_string(kSmallChunkBytes) +
                                          (tcp_only ? ", \"shm\": false}" : "}");
  static const Backend b{STRATA_ALLREDUCE_GLOO_PLUGIN,
                         tcp_only ? R"({"shm": false})" : "{}",
                         hierarchical.c_str(),
                         shm.c_str(),
                         R"({"shm": false, "algorithm": "ring", "agreement": "ring"})",
                         "RANK",
                         true,
                         "gloo on ("};
  return b;
}

}  // namespace strata::test::comm
