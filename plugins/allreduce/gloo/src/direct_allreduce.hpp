// An allreduce over a Gloo context's pairs in as few rounds of latency as the bytes allow, for
// few ranks and messages small enough that latency bounds the call. Gloo's ring takes 2(n - 1)
// rounds back to back and bcube 2 log2 n, and over TCP every round costs a rendezvous (the
// receiver's ready notice, then the data) and a wake-up of Gloo's device thread.
//  - 2 ranks: one round. Each rank sends its whole buffer to the other; both compute rank 0's
//    buffer op rank 1's. The same bytes as the ring (N out per rank), half its rounds.
//  - n > 2 ranks: two rounds. A direct reduce-scatter (every rank sends block j to rank j, which
//    folds the n copies in rank order), then a direct allgather (every rank sends its folded block
//    to every other). Each rank sends 2(n - 1)/n of the buffer, as the ring does.
// Every element is folded once, in rank order, by one rank and copied to the others, so the result
// is bitwise the same on every rank. (Gloo's ring folds own op incoming, so at 2 ranks it gives
// the same bits where the op is commutative bit for bit: SUM, but not MIN of +0 and -0.)
#pragma once

#include "dtypes.hpp"

#include <gloo/context.h>

#include <chrono>
#include <cstddef>

namespace strata::allreduce_gloo {

// Bytes of scratch direct_allreduce needs for `count` elements of `element_size` on `ranks` ranks.
size_t direct_allreduce_scratch_bytes(int ranks, size_t count, size_t element_size);

// In place on `data` (`count` elements of `element_size` bytes): the reduction by `fn` of every
// rank's `data`. `scratch` holds direct_allreduce_scratch_bytes(). Every wait is bounded by
// `timeout`; a timeout or a broken pair throws gloo::Exception (errors.hpp translates). Runs on one
// thread at a time per context, as every Gloo collective here does.
void direct_allreduce(gloo::Context& context, void* data, size_t count, size_t element_size,
                      const ReduceFn& fn, void* scratch, std::chrono::milliseconds timeout);

}  // namespace strata::allreduce_gloo
