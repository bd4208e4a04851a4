#include "piece_plan.hpp"

#include <algorithm>
#include <stdexcept>

namespace strata::offload {

std::vector<Piece> plan_pieces(std::span<const uint64_t> shard_counts, uint64_t piece_elements) {
  if (piece_elements == 0) throw std::invalid_argument("plan_pieces: piece_elements is 0");
  std::vector<Piece> pieces;
  for (size_t s = 0; s < shard_counts.size(); ++s) {
    uint64_t begin = 0;
    while (begin < shard_counts[s]) {
      if (pieces.empty() || pieces.back().elements == piece_elements) pieces.emplace_back();
      Piece& piece = pieces.back();
      const uint64_t n = std::min(shard_counts[s] - begin, piece_elements - piece.elements);
      piece.runs.push_back({s, begin, n, piece.elements});
      piece.elements += n;
      begin += n;
    }
  }
  return pieces;
}

std::vector<PipelineOp> plan_pipeline(size_t pieces, size_t buffers) {
  if (buffers < 2) throw std::invalid_argument("plan_pipeline: needs at least 2 buffers");
  std::vector<PipelineOp> ops;
  // Downloads into buffer b after piece k - buffers (its last user) has gone up.
  const auto download = [&](size_t k) {
    const size_t b = k % buffers;
    if (k >= buffers) ops.push_back({PipelineOp::wait_up, k - buffers, b});
    ops.push_back({PipelineOp::down, k, b});
  };
  if (pieces > 0) download(0);
  for (size_t k = 0; k < pieces; ++k) {
    if (k + 1 < pieces) download(k + 1);  // comes down while piece k is stepped
    ops.push_back({PipelineOp::step, k, k % buffers});
    ops.push_back({PipelineOp::up, k, k % buffers});  // goes up while piece k + 1 is stepped
  }
  ops.push_back({PipelineOp::drain, pieces, 0});
  return ops;
}

}  // namespace strata::offload
