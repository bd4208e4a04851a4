// The pinned pipeline of offload_optimizer.device cpu with shards in device memory, as plans:
// how shards are cut into staged pieces, and the order of downloads, CPU steps and uploads over
// the staging buffers (plugins/offload/src/piece_plan.hpp). The executor only walks these plans,
// so the overlap and the buffer reuse it promises are checked here, without a device.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <vector>

#include "piece_plan.hpp"

namespace strata::offload {
namespace {

TEST(OffloadPiecePlan, CoversEveryElementOnceInOrder) {
  const std::vector<uint64_t> counts = {5, 0, 12, 3, 1, 9};
  for (uint64_t size : {1u, 2u, 4u, 7u, 16u, 100u}) {
    const std::vector<Piece> pieces = plan_pieces(counts, size);
    std::vector<uint64_t> next(counts.size(), 0);  // per shard: the next element expected
    size_t last_shard = 0;
    for (size_t k = 0; k < pieces.size(); ++k) {
      const Piece& p = pieces[k];
      uint64_t staged = 0;
      for (const PieceRun& r : p.runs) {
        ASSERT_GT(r.count, 0u) << "size " << size << " piece " << k;
        EXPECT_GE(r.shard, last_shard) << "runs in shard order";
        EXPECT_EQ(r.begin, next[r.shard]) << "size " << size << " shard " << r.shard;
        EXPECT_EQ(r.staged, staged) << "runs back to back in the staging buffer";
        next[r.shard] += r.count;
        staged += r.count;
        last_shard = r.shard;
      }
      EXPECT_EQ(p.elements, staged);
      EXPECT_LE(p.elements, size);
      if (k + 1 < pieces.size()) {
        EXPECT_EQ(p.elements, size) << "only the last piece is short";
      }
    }
    EXPECT_EQ(next, counts) << "size " << size;
  }
}

TEST(OffloadPiecePlan, NoShardsOrNoElementsMakeNoPieces) {
  EXPECT_TRUE(plan_pieces(std::vector<uint64_t>{}, 8).empty());
  EXPECT_TRUE(plan_pieces(std::vector<uint64_t>{0, 0}, 8).empty());
  EXPECT_THROW(plan_pieces(std::vector<uint64_t>{3}, 0), std::invalid_argument);
}

// Replays a pipeline, asserting what the executor relies on.
void replay(size_t pieces, size_t buffers) {
  SCOPED_TRACE("pieces " + std::to_string(pieces) + " buffers " + std::to_string(buffers));
  const std::vector<PipelineOp> ops = plan_pipeline(pieces, buffers);
  std::map<size_t, long> holder;  // buffer -> the piece downloaded into it last
  std::vector<int> downed(pieces, 0), stepped(pieces, 0), upped(pieces, 0), waited(pieces, 0);
  size_t steps_done = 0;
  ASSERT_FALSE(ops.empty());
  EXPECT_EQ(ops.back().kind, PipelineOp::drain);
  for (size_t i = 0; i + 1 < ops.size(); ++i) {
    const PipelineOp& op = ops[i];
    ASSERT_LT(op.piece, pieces);
    EXPECT_EQ(op.buffer, op.piece % buffers) << "op " << i;
    switch (op.kind) {
      case PipelineOp::wait_up:
        EXPECT_TRUE(upped[op.piece]) << "waits only for an upload already enqueued";
        waited[op.piece] = 1;
        break;
      case PipelineOp::down: {
        EXPECT_FALSE(downed[op.piece]);
        const auto it = holder.find(op.buffer);
        if (it != holder.end()) {
          // The buffer's previous piece was stepped, uploaded, and the upload waited for.
          EXPECT_TRUE(stepped[it->second] && upped[it->second] && waited[it->second])
              << "piece " << op.piece << " overwrites buffer " << op.buffer << " of piece "
              << it->second;
        }
        holder[op.buffer] = static_cast<long>(op.piece);
        downed[op.piece] = 1;
        break;
      }
      case PipelineOp::step:
        EXPECT_EQ(op.piece, steps_done) << "pieces are stepped in order";
        EXPECT_TRUE(downed[op.piece]);
        EXPECT_EQ(holder[op.buffer], static_cast<long>(op.piece)) << "its buffer still holds it";
        if (op.piece + 1 < pieces) {
          EXPECT_TRUE(downed[op.piece + 1]) << "the next piece comes down during this step";
        }
        stepped[op.piece] = 1;
        ++steps_done;
        break;
      case PipelineOp::up:
        EXPECT_TRUE(stepped[op.piece]);
        EXPECT_FALSE(upped[op.piece]);
        upped[op.piece] = 1;
        break;
      case PipelineOp::drain:
        ADD_FAILURE() << "drain before the end, op " << i;
        break;
    }
  }
  EXPECT_EQ(steps_done, pieces);
  for (size_t k = 0; k < pieces; ++k) EXPECT_TRUE(upped[k]) << "piece " << k << " went up";
}

TEST(OffloadPiecePlan, PipelineOrdersCopiesAndSteps) {
  for (size_t buffers : {2u, 3u, 4u}) {
    for (size_t pieces : {0u, 1u, 2u, 3u, 4u, 7u, 12u}) replay(pieces, buffers);
  }
}

TEST(OffloadPiecePlan, ThreeBuffersOverlapUploadWithTheNextStep) {
  // With three buffers, piece k+1's download waits for piece k-2's upload, never for piece k-1's:
  // the upload of k-1 runs while k is stepped.
  const std::vector<PipelineOp> ops = plan_pipeline(6, 3);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != PipelineOp::wait_up) continue;
    ASSERT_LT(i + 1, ops.size());
    EXPECT_EQ(ops[i + 1].kind, PipelineOp::down);
    EXPECT_EQ(ops[i].piece + 3, ops[i + 1].piece);
  }
}

TEST(OffloadPiecePlan, FewerThanTwoBuffersAreRefused) {
  EXPECT_THROW(plan_pipeline(3, 1), std::invalid_argument);
  EXPECT_THROW(plan_pipeline(3, 0), std::invalid_argument);
}

}  // namespace
}  // namespace strata::offload
