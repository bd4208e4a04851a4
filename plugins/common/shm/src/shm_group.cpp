// The segment's layout, joining the group, and the announcement check; the collectives themselves
// are in shm_collectives.cpp.
#include <strata_common/shm_group.hpp>

#include <strata/comm/reduce_ops.hpp>

#include <strata/plugin.hpp>

#include <unistd.h>

#include <new>
#include <string>
#include <vector>

namespace strata::common::shm {

inline constexpr uint64_t kMagic = 0x53545241'53484d31;  // "STRASHM1"

struct SegmentHeader {
  uint64_t magic;
  uint64_t nonce;  // drawn by the creator, so a rank can tell it opened this job's segment
  uint64_t local_size;
  uint64_t slot_bytes;
  WakeWord wake;
};

struct RankRecord {
  PhaseCounter counter;
  Announcement announced[2];  // by collective number parity (see check_agreement)
  int32_t pid;
};

namespace {

constexpr size_t kPage = 4096;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

size_t header_bytes(int local_size) {
  return round_up(sizeof(SegmentHeader) + sizeof(RankRecord) * static_cast<size_t>(local_size),
                  kPage);
}

std::string describe(const Announcement& a) {
  const auto kind = static_cast<Kind>(a.kind);
  std::string text;
  switch (kind) {
    case Kind::allreduce: text = "allreduce"; break;
    case Kind::reduce_scatter: text = "reduce_scatter"; break;
    case Kind::allgatherv: text = "allgather"; break;
    case Kind::broadcast: text = "broadcast"; break;
    case Kind::barrier: return "barrier";
  }
  text += " of " + std::to_string(a.count) + " " + sdk::dtype_name(a.dtype) + " elements";
  if (kind == Kind::reduce_scatter) text += " per rank";
  if (kind == Kind::allreduce || kind == Kind::reduce_scatter) {
    text += std::string(" (") + sdk::comm::op_name(a.op) + ")";
  }
  if (kind == Kind::broadcast) text += " from rank " + std::to_string(a.root);
  if (kind == Kind::allgatherv) text += " (counts/displacements hash " + std::to_string(a.check) + ")";
  return text;
}

bool same(const Announcement& a, const Announcement& b) {
  return a.seq == b.seq && a.kind == b.kind && a.dtype == b.dtype && a.op == b.op &&
         a.root == b.root && a.count == b.count && a.check == b.check;
}

}  // namespace

size_t ShmGroup::segment_bytes(int local_size, size_t slot_bytes) {
  // Per rank two staging buffers, plus two result buffers.
  return header_bytes(local_size) + (2 * static_cast<size_t>(local_size) + 2) * slot_bytes;
}

void ShmGroup::initialise(ShmSegment& segment, int local_size, size_t slot_bytes, uint64_t nonce) {
  auto* header = new (segment.data()) SegmentHeader{};
  header->nonce = nonce;
  header->local_size = static_cast<uint64_t>(local_size);
  header->slot_bytes = slot_bytes;
  auto* records = reinterpret_cast<RankRecord*>(segment.data() + sizeof(SegmentHeader));
  for (int r = 0; r < local_size; ++r) new (&records[r]) RankRecord{};
  // Last: a rank that sees the magic sees a complete header (the creator publishes the name
  // through the plugin's transport only afterwards anyway).
  __atomic_store_n(&header->magic, kMagic, __ATOMIC_RELEASE);
}

ShmGroup::ShmGroup(ShmSegment segment, int local_rank, int local_size, size_t slot_bytes,
                   uint64_t nonce, const Kernels& kernels)
    : segment_(std::move(segment)),
      header_(reinterpret_cast<SegmentHeader*>(segment_.data())),
      records_(reinterpret_cast<RankRecord*>(segment_.data() + sizeof(SegmentHeader))),
      local_rank_(local_rank),
      local_size_(local_size),
      slot_bytes_(slot_bytes),
      kernels_(kernels),
      sources_(static_cast<size_t>(local_size)) {
  if (__atomic_load_n(&header_->magic, __ATOMIC_ACQUIRE) != kMagic || header_->nonce != nonce ||
      header_->local_size != static_cast<uint64_t>(local_size) ||
      header_->slot_bytes != slot_bytes) {
    sdk::fail(STRATA_ERR_COMM, "shared-memory segment " + segment_.name() +
                                   " is not the one local rank 0 created for this job (another "
                                   "/dev/shm, or a name reused?)");
  }
  records_[local_rank].pid = static_cast<int32_t>(getpid());
}

ShmGroup::~ShmGroup() = default;

void ShmGroup::start(bool watch_peers, bool spin) {
  std::vector<Peer> peers;
  for (int r = 0; watch_peers && r < local_size_; ++r) {
    if (r != local_rank_) peers.push_back({r, records_[r].pid});
  }
  std::vector<PhaseCounter*> counters;
  for (int r = 0; r < local_size_; ++r) counters.push_back(&records_[r].counter);
  sync_ = std::make_unique<PhaseSync>(&header_->wake, std::move(counters), local_rank_,
                                      spin ? SpinBudget::with_core_per_rank() : SpinBudget::none(),
                                      peers);
}

char* ShmGroup::staging(int rank, uint64_t phase) const {
  const size_t index = 2 * static_cast<size_t>(rank) + phase % 2;
  return segment_.data() + header_bytes(local_size_) + index * slot_bytes_;
}

char* ShmGroup::result(uint64_t phase) const {
  const size_t index = 2 * static_cast<size_t>(local_size_) + phase % 2;
  return segment_.data() + header_bytes(local_size_) + index * slot_bytes_;
}

uint64_t ShmGroup::begin(Announcement a, const char* what) {
  if (!sync_) sdk::fail(STRATA_ERR_INTERNAL, std::string(what) + ": shared-memory group not started");
  if (!broken_.empty()) {
    sdk::fail(STRATA_ERR_COMM, std::string(what) + ": an earlier collective over shared memory "
                               "failed, and the group cannot be used after that (" + broken_ + ")");
  }
  a.seq = seq_++;
  records_[local_rank_].announced[a.seq % 2] = a;
  first_phase_ = phase_ + 1;
  return first_phase_;
}

void ShmGroup::reach(uint64_t phase, const char* what) {
  sync_->arrive(phase);
  try {
    // Past the collective's first phase every peer is inside it (it reached the previous one).
    sync_->wait_all(phase, what, phase > first_phase_ ? WaitFor::round : WaitFor::arrival);
  } catch (const sdk::Error& e) {
    broken_ = e.what();
    throw;
  }
  phase_ = phase;
}

void ShmGroup::check_agreement(const char* what) const {
  // A peer rewrites announced[(seq) % 2] only for collective seq + 2, which needs this rank to
  // arrive at a later phase than the one just passed: the slot is stable while we read it.
  const uint64_t seq = seq_ - 1;
  const Announcement& mine = records_[local_rank_].announced[seq % 2];
  for (int r = 0; r < local_size_; ++r) {
    const Announcement& theirs = records_[r].announced[seq % 2];
    if (r == local_rank_ || same(mine, theirs)) continue;
    sdk::fail(STRATA_ERR_MISMATCH,
              std::string(what) + ": the ranks disagree on collective #" + std::to_string(seq) +
                  " of the shared-memory group: rank " + std::to_string(local_rank_) + " called " +
                  describe(mine) + ", rank " + std::to_string(r) + " called " +
                  describe(theirs));
  }
}

}  // namespace strata::common::shm
