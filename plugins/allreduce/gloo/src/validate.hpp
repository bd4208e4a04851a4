// Argument checks shared by the collectives (a copy of allreduce-mpi's validate.*, less its MPI
// count limit: plugins share no code outside the SDK). Each failure throws sdk::Error with a sentence that
// names the call, the argument and the expected relation, e.g.
// "allreduce: recv.count (7) must equal send.count (8)".
#pragma once

#include <strata/plugin_api.h>

#include <cstdint>

namespace strata::allreduce_gloo {

// A checked strata_buffer: known dtype, host memory, data non-null when count > 0.
struct Buffer {
  void* data;
  uint64_t count;
  int32_t dtype;
  size_t element_size;

  size_t bytes() const { return static_cast<size_t>(count) * element_size; }
  char* at(uint64_t element) const { return static_cast<char*>(data) + element * element_size; }
};

Buffer check_buffer(const char* call, const char* name, const strata_buffer* buffer);
// A collective's send and recv buffers, each checked, of the same dtype.
struct BufferPair {
  Buffer send;
  Buffer recv;
};
BufferPair check_pair(const char* call, const strata_buffer* send, const strata_buffer* recv);
// "<call>: <name>.count (<actual>) must equal <relation> (<expected>)"
void check_count(const char* call, const char* name, uint64_t actual, uint64_t expected,
                 const char* relation);
void check_op(const char* call, int32_t op);
// a * b, or UINT64_MAX if that overflows (so that a count check fails instead of wrapping).
uint64_t saturating_product(uint64_t a, uint64_t b);
// The only allowed overlap of two buffers is none at all or `in_place` exactly (then true).
bool check_in_place(const char* call, const Buffer& send, const Buffer& recv, const char* in_place,
                    const char* in_place_rule);

}  // namespace strata::allreduce_gloo
