// strata_common/shm_group.hpp — the collectives over shared memory, for ranks that all run on one
// host: a component any comm plugin can use (library strata_common_shm, plugins/common, never
// installed). The plugin sets a group up: local rank 0 creates and initialises the segment
// (ShmSegment::create, initialise), tells the others its name and nonce over its own transport,
// and each rank then constructs a ShmGroup over its mapping (the MPI plugin does this over MPI:
// plugins/allreduce/mpi/src/shm_setup.cpp). Kernels come from kernels_for(the instance's
// instruction set; shm_isa.hpp).
//
// Segment layout (ShmGroup::segment_bytes): a header (magic, nonce, sizes, the futex word), one
// record per rank (its phase counter, the collectives it announced, its pid), then for each rank
// two staging buffers of slot_bytes, then two result buffers of slot_bytes. Two of each because
// consecutive phases alternate between them: a rank may fill buffer p % 2 for phase p as soon as
// everyone has reached phase p - 1, which means everyone has finished reading what it put there
// for phase p - 2. So each round of a collective costs one phase (one wait), not two.
//
// Each collective moves its data in rounds of at most slot_bytes per rank, so that what the
// ranks exchange stays in cache: a rank copies its round's input into its staging buffer, waits
// for the phase, and then reads the others' buffers (shm_collectives.cpp says what each
// collective does per round). Results are bitwise those of a fixed order: sums fold the ranks'
// values in rank order, whatever the ranks' timing.
//
// Every rank announces each collective (kind, dtype, op, root, count) in its record; after the
// collective's first phase each rank compares the others' announcements with its own, so ranks
// that disagree end with an error naming them, not with a hang or a wrong result.
//
// A wait that fails (a peer exited, or a timeout passed) leaves the ranks at different phases: the
// group is then unusable, and every later collective fails at once naming the first failure.
// Ranks that disagree fail with STRATA_ERR_MISMATCH and the group stays usable.
//
// Not thread-safe: one thread at a time (the caller's, or the plugin's progress thread), in the
// same collective order on every rank.
#pragma once

#include "shm_kernels.hpp"
#include "shm_segment.hpp"
#include "shm_sync.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace strata::common::shm {

enum class Kind : int32_t { allreduce = 1, reduce_scatter, allgatherv, broadcast, barrier };

// What a rank says it is about to do: the same on every rank, or the ranks disagree.
struct Announcement {
  uint64_t seq;  // the group's collective number
  int32_t kind;
  int32_t dtype;
  int32_t op;
  int32_t root;
  uint64_t count;  // allreduce: elements; reduce_scatter: elements per rank; allgatherv: the total
  uint64_t check;  // allgatherv: a hash of the counts and displacements; else 0
};

struct RankRecord;
struct SegmentHeader;

class ShmGroup {
 public:
  // Bytes of a segment for `local_size` ranks with staging buffers of `slot_bytes`.
  static size_t segment_bytes(int local_size, size_t slot_bytes);
  // The creator writes the header before any other rank opens the segment.
  static void initialise(ShmSegment& segment, int local_size, size_t slot_bytes, uint64_t nonce);
  // Joins: checks the header against what the creator announced (throws sdk::Error naming the
  // segment if it differs) and writes this rank's record (pid, rank).
  ShmGroup(ShmSegment segment, int local_rank, int local_size, size_t slot_bytes, uint64_t nonce,
           const Kernels& kernels);
  ~ShmGroup();
  ShmGroup(const ShmGroup&) = delete;
  ShmGroup& operator=(const ShmGroup&) = delete;

  // Once every rank has joined: start the phase counting, watching the peers' processes when
  // `watch_peers` (every rank runs in this process's pid namespace, so their pids mean the same
  // here), and letting waits spin first when `spin` (the ranks have a core each).
  void start(bool watch_peers, bool spin);
  ShmSegment& segment() { return segment_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  size_t slot_bytes() const { return slot_bytes_; }
  bool spins() const { return sync_->spins(); }
  // Bounds each collective's waits (after start()): a peer that does not arrive within it fails
  // the collective (STRATA_ERR_COMM) naming it. 0 (the default): no bound, a stalled live peer is
  // the runtime's stall inspector's to end.
  void set_timeout(int64_t timeout_ms) { sync_->set_timeout(timeout_ms * 1'000'000); }

  // The collectives, on host memory. Arguments are validated by the caller (collectives.hpp)
  // except agreement across ranks, which they check. `element_size` is the dtype's.
  // recv may equal send (allreduce), recv may be send's first block or this rank's own block
  // (reduce_scatter: it stages the other blocks only, and reads its own where it folds it), send
  // may be recv + displs[rank] (allgatherv).
  void allreduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op);
  void reduce_scatter(const void* send, void* recv, uint64_t recv_count, int32_t dtype,
                      int32_t op);
  void allgatherv(const void* send, void* recv, const uint64_t* counts, const uint64_t* displs,
                  int32_t dtype);
  void broadcast(void* data, uint64_t count, int32_t dtype, int root);
  void barrier();

 private:
  // Messages up to this size are reduced in one phase: every rank stages all of its input and
  // reduces the whole message itself. That skips the second phase and the gather, which for
  // small messages cost more than the redundant arithmetic.
  static constexpr uint64_t kDirectMaxBytes = 16 << 10;
  void direct_allreduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op);

  // Announces `a` (numbering it) and returns the number of the collective's first phase.
  uint64_t begin(Announcement a, const char* what);
  // Arrives at `phase` (what this rank staged for it is complete) and waits for everyone.
  void reach(uint64_t phase, const char* what);
  // After the collective's first reach(): throws STRATA_ERR_MISMATCH naming the first rank whose
  // announcement differs from this rank's.
  void check_agreement(const char* what) const;

  char* staging(int rank, uint64_t phase) const;
  char* result(uint64_t phase) const;

  ShmSegment segment_;
  SegmentHeader* header_;
  RankRecord* records_;
  int local_rank_;
  int local_size_;
  size_t slot_bytes_;
  const Kernels& kernels_;
  std::unique_ptr<PhaseSync> sync_;
  uint64_t phase_ = 0;  // the last phase this rank arrived at
  uint64_t seq_ = 0;    // collectives started
  uint64_t first_phase_ = 0;  // the current collective's first phase
  // The first failure of a wait (a peer exited or timed out): the ranks' phases no longer line up,
  // so every later collective fails at once with it.
  std::string broken_;
  std::vector<const void*> sources_;  // the reduction's inputs, one per rank (kept to reuse)
};

}  // namespace strata::common::shm
