// Argument checks shared by the collectives: the SDK's (strata/comm/collective_args.hpp), called
// unqualified here. Each failure throws sdk::Error with a sentence that names the call, the
// argument and the expected relation, e.g. "allreduce: recv.count (7) must equal send.count (8)".
#pragma once

#include <strata/comm/collective_args.hpp>

namespace strata::allreduce_gloo {

using namespace sdk::comm;

// Named in the message for a buffer that is not in host memory.
inline constexpr char kPluginName[] = "allreduce-gloo";

}  // namespace strata::allreduce_gloo
