// Stages 1-3 after the optimizer step: brings every rank's updated values of the whole
// (non-partitioned) buckets into every rank's parameters. It only moves data: each rank's values
// are already in the model dtype (fp32 models: its masters, which at stages 1-2 are its own
// ranges of the parameters' `data`; f16/bf16: the model copies the step wrote into those ranges,
// see master_partition.hpp). Per bucket, in
// pieces of c elements (c = allgather_bucket_size / N, a multiple of 16, at least 16), each rank
// packs its slice's piece, allgathers it, and copies block r into the parameters where rank r's
// slice lies (padding skipped). Stage 3's partitioned buckets need nothing: their shards' copies
// land in the parameter partition, which gather allgathers.
#pragma once

#include "comm_link.hpp"
#include "param.hpp"
#include "partition_layout.hpp"

#include <cstdint>
#include <vector>

namespace strata::zero {

// The piece size c for `allgather_bucket_size` elements over `ranks`.
uint64_t allgather_piece(uint64_t allgather_bucket_size, int ranks);

// Staging buffers are accounted STRATA_MEM_COMM_BUFFERS and freed on return. `master` is the
// rank's master partition (layout offsets), read for fp32 models that keep one (nullptr: they
// keep their masters in `data`); otherwise the rank's own ranges of `data` are read, where f16/
// bf16 steps wrote their model copies. Collective (blocking).
// Returns the bytes it received (the timeline's "publish" span shows them).
uint64_t publish_by_allgather(const sdk::Host& host, CommLink& comm, const PartitionLayout& layout,
                          const std::vector<ParamRecord>& params, int32_t dtype, uint64_t piece,
                          const float* master);

}  // namespace strata::zero
