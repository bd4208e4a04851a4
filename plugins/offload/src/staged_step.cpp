#include "staged_step.hpp"

#include <algorithm>

namespace strata::offload {
namespace {

bool has_model(const strata_shard& s) {
  return STRATA_STRUCT_HAS(&s, strata_shard, model_dtype) && s.model != nullptr;
}

}  // namespace

StagedPipeline::StagedPipeline(const sdk::Host& host, std::span<const strata_shard> shards,
                               uint64_t piece_elements, size_t buffers, bool model_copies)
    : host_(host) {
  std::vector<uint64_t> counts;
  for (const strata_shard& s : shards) counts.push_back(s.count);
  pieces_ = plan_pieces(counts, piece_elements);
  size_t runs = 0;
  uint64_t widest = 0;
  for (const Piece& p : pieces_) {
    first_run_.push_back(runs);
    runs += p.runs.size();
    widest = std::max(widest, p.elements);
  }
  buffers = std::min(buffers, std::max<size_t>(pieces_.size(), 2));
  if (widest > 0) {
    pipe_ = std::make_unique<device::CopyPipe>(buffers);
    for (size_t b = 0; b < buffers; ++b) {
      Staging s;
      s.master = alloc_floats(widest);
      s.grad = alloc_floats(widest);
      // Two bytes per element: half the floats, rounded up.
      if (model_copies) s.model = reinterpret_cast<uint16_t*>(alloc_floats((widest + 1) / 2));
      staging_.push_back(s);
    }
  }
  if (!pinned_) {
    host_.log(STRATA_LOG_WARN,
              "offload: the system refused to lock the %s of staging buffers (RLIMIT_MEMLOCK); "
              "pageable buffers make the copies synchronous",
              format_bytes(staged_bytes_).c_str());
  }
}

StagedPipeline::~StagedPipeline() {
  pipe_.reset();  // waits for copies still reading or writing the buffers
  for (void* p : allocations_) host_.free(p);
}

float* StagedPipeline::alloc_floats(uint64_t count) {
  const size_t bytes = count * sizeof(float);
  void* p = host_.try_alloc_pinned(bytes, STRATA_MEM_COMM_BUFFERS);
  if (p == nullptr) {
    pinned_ = false;
    p = host_.alloc(bytes, STRATA_MEM_COMM_BUFFERS);
  }
  allocations_.push_back(p);
  staged_bytes_ += bytes;
  return static_cast<float*>(p);
}

std::vector<uint64_t> StagedPipeline::run_counts() const {
  std::vector<uint64_t> counts;
  for (const Piece& p : pieces_) {
    for (const PieceRun& r : p.runs) counts.push_back(r.count);
  }
  return counts;
}

void StagedPipeline::download(std::span<const strata_shard> shards, size_t k, size_t b) {
  const Staging& s = staging_[b];
  for (const PieceRun& r : pieces_[k].runs) {
    const strata_shard& sh = shards[r.shard];
    pipe_->down(s.master + r.staged, sh.master + r.begin, r.count * sizeof(float));
    pipe_->down(s.grad + r.staged, sh.grad + r.begin, r.count * sizeof(float));
  }
  pipe_->down_done(b);
}

void StagedPipeline::upload(std::span<const strata_shard> shards, size_t k, size_t b) {
  const Staging& s = staging_[b];
  for (const PieceRun& r : pieces_[k].runs) {
    const strata_shard& sh = shards[r.shard];
    pipe_->up(sh.master + r.begin, s.master + r.staged, r.count * sizeof(float));
    if (s.model != nullptr && has_model(sh)) {
      pipe_->up(static_cast<uint16_t*>(sh.model) + r.begin, s.model + r.staged,
                r.count * sizeof(uint16_t));
    }
  }
  pipe_->up_done(b);
}

void StagedPipeline::step(std::span<const strata_shard> shards, std::span<float* const> run_state,
                          const PieceStep& step) {
  if (pieces_.empty()) return;
  void* stream = host_.cuda_stream();
  pipe_->begin(stream);  // the gradients the host's stream produced are complete
  std::vector<strata_shard> staged;
  std::vector<StateSlice> slices;
  for (const PipelineOp& op : plan_pipeline(pieces_.size(), staging_.size())) {
    switch (op.kind) {
      case PipelineOp::wait_up:
        pipe_->wait_up(op.buffer);
        break;
      case PipelineOp::down:
        download(shards, op.piece, op.buffer);
        break;
      case PipelineOp::step: {
        pipe_->wait_down(op.buffer);
        const Staging& s = staging_[op.buffer];
        const Piece& piece = pieces_[op.piece];
        staged.clear();
        slices.clear();
        for (size_t i = 0; i < piece.runs.size(); ++i) {
          const PieceRun& r = piece.runs[i];
          strata_shard h = shards[r.shard];
          h.offset += r.begin;
          h.count = r.count;
          h.master = s.master + r.staged;
          h.grad = s.grad + r.staged;
          if (has_model(h)) h.model = s.model != nullptr ? s.model + r.staged : nullptr;
          staged.push_back(h);
          slices.push_back({i, 0, r.count, run_state[first_run_[op.piece] + i]});
        }
        step(staged, slices);
        break;
      }
      case PipelineOp::up:
        upload(shards, op.piece, op.buffer);
        break;
      case PipelineOp::drain:
        pipe_->end(stream);
        break;
    }
  }
}

void StagedPipeline::for_each_run(
    size_t shard, uint64_t first, uint64_t count,
    const std::function<void(size_t, uint64_t, uint64_t, uint64_t)>& f) const {
  size_t run = 0;
  for (const Piece& p : pieces_) {
    for (const PieceRun& r : p.runs) {
      if (r.shard == shard) {
        const uint64_t lo = std::max(first, r.begin);
        const uint64_t hi = std::min(first + count, r.begin + r.count);
        if (lo < hi) f(run, lo - r.begin, hi - lo, lo - first);
      }
      ++run;
    }
  }
}

std::string StagedPipeline::describe() const {
  return std::to_string(pieces_.size()) + " piece" + (pieces_.size() == 1 ? "" : "s") +
         " staged through " + std::to_string(staging_.size()) + " " +
         (pinned_ ? "pinned" : "pageable") + " buffers (" + format_bytes(staged_bytes_) +
         ") between the device and the CPU";
}

}  // namespace strata::offload
