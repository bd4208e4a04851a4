// Argument checks shared by the collectives: the SDK's (strata/comm/collective_args.hpp, called
// unqualified here), plus MPI's int count limit. Each failure throws sdk::Error with a sentence
// that names the call, the argument and the expected relation, e.g.
// "allreduce: recv.count (7) must equal send.count (8)".
#pragma once

#include <strata/comm/collective_args.hpp>

#include <cstdint>

namespace strata::allreduce_mpi {

using namespace sdk::comm;

// Named in the message for a buffer that is not in host memory.
inline constexpr char kPluginName[] = "allreduce-mpi";

// MPI 3 counts are ints.
int to_mpi_count(const char* call, const char* name, uint64_t count);

}  // namespace strata::allreduce_mpi
