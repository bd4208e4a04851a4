// offload_optimizer.device cpu with shards in device memory (ABI 1.7) steps on the host in
// pieces, ZeRO-Offload style: piece k's master and gradient come down into a pinned staging
// buffer while the CPU steps piece k-1 and piece k-2's results go up. Both pure plans here (no
// CUDA, no memory): how the shards are cut into pieces, and in which order the copies and steps
// of a pipeline over `buffers` staging buffers run and wait for each other.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace strata::offload {

// A run of one shard's elements inside a piece.
struct PieceRun {
  size_t shard;     // index into the shard list
  uint64_t begin;   // first element within that shard
  uint64_t count;
  uint64_t staged;  // its first element within the piece's staging buffer
};

struct Piece {
  std::vector<PieceRun> runs;  // in shard order
  uint64_t elements = 0;       // sum of the runs' counts (<= the piece size)
};

// Cuts the shards (their element counts, in order) into pieces of at most `piece_elements`
// elements each, filling every piece before the next starts; empty shards get no run. Throws
// std::invalid_argument for piece_elements 0.
std::vector<Piece> plan_pieces(std::span<const uint64_t> shard_counts, uint64_t piece_elements);

// One step of the pipeline, run in order by the executor.
struct PipelineOp {
  enum Kind {
    wait_up,  // block until the upload of `piece` (the last user of `buffer`) has finished
    down,     // enqueue the download of `piece` into `buffer`
    step,     // wait for piece's download, step it on the CPU in `buffer`
    up,       // enqueue the upload of `piece` from `buffer`
    drain,    // block until every upload has finished
  };
  Kind kind;
  size_t piece;
  size_t buffer;
};

// The order for `pieces` pieces over `buffers` staging buffers (>= 2): piece k uses buffer
// k % buffers; piece k+1's download is enqueued before piece k is stepped; a buffer is downloaded
// into again only after the upload that last read it has finished (wait_up). Throws
// std::invalid_argument for fewer than 2 buffers.
std::vector<PipelineOp> plan_pipeline(size_t pieces, size_t buffers);

}  // namespace strata::offload
