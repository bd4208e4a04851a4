// Optimizer state on an NVMe drive (ZeRO-Infinity's offload_optimizer device "nvme").
//
// The shards' elements, taken in order, are cut into pieces of sub_group_size elements. Piece p's
// state (floats_per_element arrays per slice, as StateSlice describes) sits in its own slot of the
// swap file, padded to the O_DIRECT alignment. A step streams the pieces through buffer_count
// buffers: the first buffer_count pieces are read ahead; after the optimizer has stepped piece p,
// its buffer is written back and (linked behind that write, in the kernel) refilled with piece
// p + buffer_count. So while piece p is stepped, the previous pieces are being written and the
// next ones read.
//
// Timeline spans, on the step's thread: "nvme_read" for the reads ahead (index -1) and for each
// wait until piece p's state is in memory (index p); "nvme_write" for each write-back issued
// (index p) and for the final wait for the write-backs (index -1). With io_uring the issuing is
// quick and the waits show what the step did not hide; synchronous I/O happens as it is issued.
//
// Checkpoints (copy_range) go through the same queue and buffer 0, between steps when no buffer
// is in use: the file is the state's only copy then, so a range written there is what the next
// step reads. Each run of the range within one piece moves as the 4 KiB blocks around it
// (O_DIRECT wants aligned transfers), read-modify-write for a write that covers part of a block.
#include <algorithm>
#include <cstring>

#include "io_queue.hpp"
#include "state_store.hpp"
#include "swap_file.hpp"

namespace strata::offload {
namespace {

uint64_t round_up(uint64_t x, uint64_t to) { return (x + to - 1) / to * to; }

// io_uring transfers take 32-bit lengths; pieces stay well below that.
constexpr uint64_t kMaxPieceBytes = uint64_t{1} << 30;

// One shard's slice within a piece, for finding a shard's elements in the file.
struct Run {
  size_t piece;
  size_t slice;  // index into that piece's slices
};

struct Piece {
  uint64_t offset;  // in the file
  uint64_t bytes;   // transferred: the piece's floats, rounded up to kDirectAlignment
  std::vector<StateSlice> slices;       // state pointers filled in when a buffer holds the piece
  std::vector<uint64_t> state_offsets;  // per slice, in floats from the buffer's start
};

class NvmeStore final : public StateStore {
 public:
  NvmeStore(const sdk::Host& host, const StateLayout& layout, const OffloadConfig& config)
      : host_(host), tracer_(host), file_(config.nvme_path, "offload_optimizer.nvme_path") {
    const uint64_t per = layout.floats_per_element;
    const uint64_t elements = layout.elements();
    if (per == 0 || elements == 0) {  // no state (SGD without momentum): no file traffic
      for (size_t i = 0; i < layout.shard_counts.size(); ++i) {
        stateless_.push_back({i, 0, layout.shard_counts[i], nullptr});
      }
      return;
    }
    piece_elements_ = std::min<uint64_t>({config.sub_group_size, elements,
                                          kMaxPieceBytes / (per * sizeof(float))});
    // The file's size from the counts alone: a drive too small is reported before anything
    // proportional to the model is built.
    const uint64_t slot = round_up(piece_elements_ * per * sizeof(float), kDirectAlignment);
    const uint64_t count = (elements + piece_elements_ - 1) / piece_elements_;
    const uint64_t last = elements - (count - 1) * piece_elements_;
    try {
      file_.reserve((count - 1) * slot + round_up(last * per * sizeof(float), kDirectAlignment));
      cut_pieces(layout, slot);
      host_.account(STRATA_MEM_OPTIMIZER_STATE, STRATA_MEM_DISK,
                    static_cast<int64_t>(file_.size()));
      accounted_ = true;
      allocate_buffers(std::min<uint64_t>(config.buffer_count, pieces_.size()), slot,
                       config.pin_memory);
      queue_ = std::make_unique<IoQueue>(file_.fd(), static_cast<unsigned>(buffers_.size()),
                                         file_.name() + " (unlinked)");
    } catch (...) {
      release();
      throw;
    }
    if (!queue_->fallback_reason().empty()) {
      host_.log(STRATA_LOG_WARN,
                "nvme offload: io_uring is unavailable (%s); reads and writes of %s run "
                "synchronously, without overlapping the step",
                queue_->fallback_reason().c_str(), file_.dir().c_str());
    }
  }

  ~NvmeStore() override { release(); }
  NvmeStore(const NvmeStore&) = delete;
  NvmeStore& operator=(const NvmeStore&) = delete;

  void for_each_piece(const Visitor& visit) override {
    if (pieces_.empty()) {
      visit(stateless_);
      return;
    }
    const size_t count = pieces_.size();
    const size_t ring = buffers_.size();
    try {
      int64_t begin = tracer_.now();
      uint64_t bytes = 0;
      for (size_t p = 0; p < std::min(ring, count); ++p) {
        queue_->read(tag(p), buffers_[p % ring], pieces_[p].bytes, pieces_[p].offset);
        bytes += pieces_[p].bytes;
      }
      tracer_.span("nvme_read", begin, -1, bytes);
      for (size_t p = 0; p < count; ++p) {
        const unsigned b = tag(p);
        const auto index = static_cast<int64_t>(p);
        begin = tracer_.now();
        queue_->wait(b);
        tracer_.span("nvme_read", begin, index, pieces_[p].bytes);
        auto* base = static_cast<float*>(buffers_[b]);
        Piece& piece = pieces_[p];
        for (size_t i = 0; i < piece.slices.size(); ++i) {
          piece.slices[i].state = base + piece.state_offsets[i];
        }
        visit(piece.slices);
        begin = tracer_.now();
        if (p + ring < count) {
          const Piece& next = pieces_[p + ring];
          queue_->write_then_read(b, base, pieces_[p].bytes, pieces_[p].offset, next.bytes,
                                  next.offset);
        } else {
          queue_->write(b, base, pieces_[p].bytes, pieces_[p].offset);
        }
        tracer_.span("nvme_write", begin, index, pieces_[p].bytes);
      }
      begin = tracer_.now();
      for (unsigned b = 0; b < ring; ++b) queue_->wait(b);
      tracer_.span("nvme_write", begin, -1, 0);
    } catch (...) {
      queue_->drain();  // the kernel may still be using the buffers
      throw;
    }
  }

  void copy_range(Direction direction, size_t shard, size_t slot, uint64_t first, uint64_t count,
                  float* data) override {
    if (count == 0) return;
    const std::vector<Run>& runs = shard_runs_[shard];
    // The first run holding element `first` (runs are in element order; empty ones end at 0).
    auto run = std::partition_point(runs.begin(), runs.end(), [&](const Run& r) {
      const StateSlice& s = pieces_[r.piece].slices[r.slice];
      return s.begin + s.count <= first;
    });
    try {
      for (uint64_t done = 0; done < count; ++run) {
        const Piece& piece = pieces_[run->piece];
        const StateSlice& s = piece.slices[run->slice];
        const uint64_t from = first + done;
        const uint64_t take = std::min(count - done, s.begin + s.count - from);
        const uint64_t at = piece.state_offsets[run->slice] + slot * s.count + (from - s.begin);
        transfer(direction, piece, at * sizeof(float), take * sizeof(float), data + done);
        done += take;
      }
    } catch (...) {
      queue_->drain();
      throw;
    }
  }

  std::string describe() const override {
    if (pieces_.empty()) return "nothing on disk (the optimizer keeps no state)";
    return format_bytes(file_.size()) + " in " + file_.dir() + " (" +
           std::to_string(pieces_.size()) + " pieces of up to " +
           std::to_string(piece_elements_) + " elements, " + std::to_string(buffers_.size()) +
           " buffers of " + format_bytes(slot_bytes_) + (pinned_ ? " pinned" : "") + ", " +
           (file_.direct() ? "O_DIRECT" : "page cache") + ", " +
           (queue_->fallback_reason().empty() ? "io_uring" : "synchronous I/O") + ")";
  }

 private:
  void release() noexcept {
    queue_.reset();  // waits for anything still in flight before the buffers go
    for (void* b : buffers_) host_.free(b);
    buffers_.clear();
    if (accounted_) {
      host_.account(STRATA_MEM_OPTIMIZER_STATE, STRATA_MEM_DISK,
                    -static_cast<int64_t>(file_.size()));
      accounted_ = false;
    }
  }

  // Moves `bytes` at byte `at` of `piece`'s slot between `data` and the file, through buffer 0
  // and the 4 KiB blocks that hold them (inside the piece's transfer: it is block-aligned).
  void transfer(Direction direction, const Piece& piece, uint64_t at, uint64_t bytes,
                float* data) {
    const uint64_t lo = at / kDirectAlignment * kDirectAlignment;
    const uint64_t hi = round_up(at + bytes, kDirectAlignment);
    char* buffer = static_cast<char*>(buffers_[0]);
    const bool whole = direction == Direction::write && lo == at && hi == at + bytes;
    if (!whole) {  // a write covering whole blocks need not read them first
      queue_->read(0, buffer, hi - lo, piece.offset + lo);
      queue_->wait(0);
    }
    if (direction == Direction::read) {
      std::memcpy(data, buffer + (at - lo), bytes);
      return;
    }
    std::memcpy(buffer + (at - lo), data, bytes);
    queue_->write(0, buffer, hi - lo, piece.offset + lo);
    queue_->wait(0);
  }

  unsigned tag(size_t piece) const { return static_cast<unsigned>(piece % buffers_.size()); }

  // Walks the shards in order, cutting every piece_elements_ elements; piece p's slot starts at
  // p * slot bytes.
  void cut_pieces(const StateLayout& layout, uint64_t slot) {
    const uint64_t per = layout.floats_per_element;
    Piece piece{0, 0, {}, {}};
    uint64_t in_piece = 0;
    auto close_piece = [&] {
      piece.bytes = round_up(in_piece * per * sizeof(float), kDirectAlignment);
      pieces_.push_back(std::move(piece));
      piece = Piece{pieces_.size() * slot, 0, {}, {}};
      in_piece = 0;
    };
    shard_runs_.assign(layout.shard_counts.size(), {});
    for (size_t s = 0; s < layout.shard_counts.size(); ++s) {
      uint64_t begin = 0;
      const uint64_t count = layout.shard_counts[s];
      while (begin < count) {
        const uint64_t take = std::min(count - begin, piece_elements_ - in_piece);
        shard_runs_[s].push_back({pieces_.size(), piece.slices.size()});
        piece.slices.push_back({s, begin, take, nullptr});
        piece.state_offsets.push_back(in_piece * per);
        begin += take;
        in_piece += take;
        if (in_piece == piece_elements_) close_piece();
      }
      if (count == 0) {
        piece.slices.push_back({s, 0, 0, nullptr});
        piece.state_offsets.push_back(in_piece * per);
      }
    }
    if (in_piece > 0) close_piece();
  }

  void allocate_buffers(uint64_t count, uint64_t slot, bool pin) {
    slot_bytes_ = slot;
    pinned_ = pin;
    for (uint64_t i = 0; i < count; ++i) {
      void* b = pinned_
                    ? host_.try_alloc_pinned(slot, STRATA_MEM_OPTIMIZER_STATE, kDirectAlignment)
                    : nullptr;
      if (pinned_ && b == nullptr) {
        pinned_ = false;
        host_.log(STRATA_LOG_WARN,
                  "offload_optimizer.pin_memory: the system refused to lock the nvme buffers "
                  "(RLIMIT_MEMLOCK, or a host older than ABI 1.2); they stay pageable");
      }
      if (b == nullptr) b = host_.alloc(slot, STRATA_MEM_OPTIMIZER_STATE, kDirectAlignment);
      buffers_.push_back(b);
    }
  }

  sdk::Host host_;
  sdk::Tracer tracer_;
  SwapFile file_;
  uint64_t piece_elements_ = 0;
  uint64_t slot_bytes_ = 0;
  bool pinned_ = false;
  std::vector<Piece> pieces_;
  std::vector<std::vector<Run>> shard_runs_;  // per shard, its non-empty runs in element order
  std::vector<void*> buffers_;
  std::unique_ptr<IoQueue> queue_;
  bool accounted_ = false;
  std::vector<StateSlice> stateless_;  // every shard, no state: when the optimizer keeps none
};

}  // namespace

std::unique_ptr<StateStore> make_nvme_store(const sdk::Host& host, const StateLayout& layout,
                                            const OffloadConfig& config) {
  return std::make_unique<NvmeStore>(host, layout, config);
}

}  // namespace strata::offload
