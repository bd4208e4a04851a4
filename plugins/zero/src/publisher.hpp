// Stages 1-3 after the optimizer step: brings the updated fp32 masters back into the parameters
// every rank reads. Each rank casts its master slice of a bucket to the model dtype in pieces of
// c elements (c = allgather_bucket_size / N, a multiple of 16, at least 16), allgathers the piece
// from every rank, and copies block r into the parameters' `data` where rank r's slice lies
// (padding skipped). Stage 3's partitioned buckets are not allgathered: see Stage3::publish.
#pragma once

#include "comm_link.hpp"
#include "dtype_cast.hpp"
#include "param.hpp"
#include "partition_layout.hpp"

#include <cstdint>
#include <vector>

namespace strata::zero {

// The piece size c for `allgather_bucket_size` elements over `ranks`.
uint64_t allgather_piece(uint64_t allgather_bucket_size, int ranks);

// Allgathers the masters (the rank's partition, `layout` offsets) of every bucket that is not
// partitioned into params[i].data. Staging buffers are accounted STRATA_MEM_COMM_BUFFERS and
// freed on return. Collective (blocking).
void publish_by_allgather(const sdk::Host& host, CommLink& comm, const Caster& caster,
                          const PartitionLayout& layout, const std::vector<ParamRecord>& params,
                          int32_t dtype, uint64_t piece, const float* master);

}  // namespace strata::zero
