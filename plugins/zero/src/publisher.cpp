#include "publisher.hpp"

#include "dtype_cast.hpp"

#include <algorithm>
#include <cstring>

namespace strata::zero {

uint64_t allgather_piece(uint64_t allgather_bucket_size, int ranks) {
  const uint64_t per_rank = allgather_bucket_size / static_cast<uint64_t>(ranks);
  return std::max(kSliceAlignment, per_rank / kSliceAlignment * kSliceAlignment);
}

namespace {

// Writes elements [o, o + n) of this rank's slice of bucket b, in the model dtype, into `send`.
void pack_own(const Memory& memory, const PartitionLayout& layout, size_t b, uint64_t o,
              uint64_t n, const std::vector<ParamRecord>& params, int32_t dtype,
              const float* master, unsigned char* send) {
  const size_t esize = sdk::dtype_size(dtype);
  if (dtype == STRATA_F32 && master != nullptr) {  // a master partition: the values
    memory.copy(send, master + layout.bucket(b).offset + o, n * esize);
    return;
  }
  // Padding travels as zeros (receivers skip it); the rest is where the step wrote it (or, for
  // fp32 masters kept in the parameters, where the step updated them).
  memory.zero(send, n * esize);
  const uint64_t first = layout.my_begin(b) + o;
  layout.for_each_piece(b, first, n,
                        [&](const BucketSlot& slot, uint64_t param_offset, uint64_t flat,
                            uint64_t count) {
                          memory.copy(send + (flat - first) * esize,
                                      element_at(params[slot.param_index].data, dtype,
                                                 param_offset),
                                      count * esize);
                        });
}

}  // namespace

uint64_t publish_by_allgather(const sdk::Host& host, CommLink& comm, const PartitionLayout& layout,
                          const std::vector<ParamRecord>& params, int32_t dtype, uint64_t piece,
                          const float* master) {
  uint64_t widest = 0;  // the largest piece any allgathered bucket needs
  for (const BucketPartition& part : layout.buckets()) {
    if (!part.partitioned) widest = std::max(widest, std::min(piece, part.slice));
  }
  if (widest == 0) return 0;
  const size_t esize = sdk::dtype_size(dtype);
  const auto ranks = static_cast<uint64_t>(layout.ranks());
  Buffer<unsigned char> send(host, widest * esize, STRATA_MEM_COMM_BUFFERS);
  Buffer<unsigned char> recv(host, ranks * widest * esize, STRATA_MEM_COMM_BUFFERS);
  uint64_t received = 0;
  const Memory memory(host);

  for (size_t b = 0; b < layout.buckets().size(); ++b) {
    const BucketPartition& part = layout.bucket(b);
    if (part.partitioned) continue;
    for (uint64_t o = 0; o < part.slice; o += piece) {
      const uint64_t n = std::min(piece, part.slice - o);
      pack_own(memory, layout, b, o, n, params, dtype, master, send.data());
      comm.wait(comm.start_allgather(send.data(), recv.data(), n, dtype));
      received += ranks * n * esize;
      for (uint64_t r = 0; r < ranks; ++r) {
        const uint64_t first = r * part.slice + o;  // flat position of block r's first element
        const unsigned char* block = recv.data() + r * n * esize;
        layout.for_each_piece(b, first, n,
                              [&](const BucketSlot& slot, uint64_t param_offset, uint64_t flat,
                                  uint64_t count) {
                                memory.copy(element_at(params[slot.param_index].data, dtype,
                                                       param_offset),
                                            block + (flat - first) * esize, count * esize);
                              });
      }
    }
  }
  return received;
}

}  // namespace strata::zero
