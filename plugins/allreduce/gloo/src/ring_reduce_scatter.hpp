// A true reduce-scatter over a Gloo context's pairs, for the collectives that do not go through
// shared memory. libgloo offers reduce-scatter only through an old-style template class bound to
// fixed buffers; the plugin used to run an allreduce of the whole buffer and keep one block, which
// moves about twice the bytes. This ring sends each block once per hop instead.
#pragma once

#include "dtypes.hpp"

#include <gloo/context.h>

#include <chrono>
#include <cstddef>

namespace strata::allreduce_gloo {

// In place on `all`: `context->size` blocks of `block_elements` elements of `element_size` bytes.
// Afterwards this rank's block (block `rank`) holds the reduction by `fn` of every rank's block
// `rank`; the other blocks hold partial sums. `scratch` holds one block (the incoming one).
//
// Step s (0 ... N-2) sends block (r - s - 1) mod N to rank r + 1 and folds the block
// (r - s - 2) mod N that rank r - 1 sends into the local copy, so block b is summed in rank order
// b + 1, b + 2, ..., b (mod N) and each rank sends (N - 1)/N of the buffer once. Every wait is
// bounded by `timeout`; a timeout or a broken pair throws gloo::Exception (errors.hpp translates).
// Runs on one thread at a time per context, as every Gloo collective here does.
void ring_reduce_scatter(gloo::Context& context, void* all, void* scratch, size_t block_elements,
                         size_t element_size, const ReduceFn& fn, std::chrono::milliseconds timeout);

}  // namespace strata::allreduce_gloo
