// Before each collective the ranks exchange what they are about to do (a small header: the kind,
// dtype, op, count, root and a digest of allgatherv's counts; split() too, its color and key as
// payload) and compare. Gloo itself would hang
// until the timeout, or read past a block, when ranks disagree; with the check, every rank fails
// the call alike with STRATA_ERR_MISMATCH and a sentence such as "rank 0 called allreduce SUM of 10
// f32, rank 1 called allreduce SUM of 11 f32".
//
// The exchange is one allgather of a fixed-size frame: the header and up to kFoldBytes of payload,
// either direct (every rank sends its frame to every other at once: one round of latency) or
// Gloo's ring allgather (size - 1 rounds; the config's `agreement` picks, by default direct up to
// 16 ranks). With the two-level collectives across hosts (a shared-memory group per host, every
// host holding the same number of ranks) it runs in two levels instead: the frames are gathered
// within the host through shared memory, then each local rank exchanges its host's frames with
// the same local rank on the other hosts (direct or ring among the hosts, as above). Every rank
// then holds every rank's frame, as with the world exchange, and decides alike. Measured on 2 x 2
// namespace hosts (bench/allreduce run_multinode.sh), the world exchange was half of a 64 KiB
// two-level allreduce's time: 4 ranks each sending 3 frames over TCP, against one message of its
// host's 2 frames to 1 namesake here. A rank whose host's shared-memory step fails still meets its
// namesakes, with a block saying so, and they fail at once (STRATA_ERR_COMM) instead of waiting
// out the timeout.
// Every rank of an instance uses the same exchange for every call (Collectives picks it once), so
// ranks that disagree on the call still meet in the same exchange.
// A reduction whose payload fits travels in it, so the header costs no round of its own: every
// rank reduces the gathered payloads itself, in rank order, and the collective needs no second
// exchange (small allreduces were two rounds of Gloo latency, agreement then data). The frame's
// size is the same for every call, so ranks that disagree on the payload's size still exchange
// whole frames and fail with the mismatch, not with a transport error.
#pragma once

#include <strata_common/shm_group.hpp>
#include <strata_common/shm_two_level.hpp>

#include <gloo/context.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace strata::allreduce_gloo {

// CallHeader.kind of split()'s exchange (entry.cpp), which is not a strata_collective.
inline constexpr int32_t kSplitKind = 1000;

struct CallHeader {
  int32_t kind = 0;  // strata_collective
  int32_t dtype = -1;
  int32_t op = -1;
  int32_t root = -1;
  uint64_t count = 0;
  uint64_t digest = 0;  // allgatherv: FNV-1a of recv_counts and displs
};

// The payload a frame carries: a reduction's input of at most this many bytes (1 KiB: 256 f32
// or, widened, 512 halves) rides with the header.
inline constexpr size_t kFoldBytes = 1024;

struct Frame {
  CallHeader header;
  unsigned char payload[kFoldBytes];
};

// How the frames travel: fills `all` (one frame per rank of the world, index: rank) with every
// rank's `mine`. Throws a Gloo exception or sdk::Error (STRATA_ERR_COMM, or the shared-memory
// group's own status) on a transport failure.
using FrameExchange = std::function<void(const Frame& mine, std::vector<Frame>& all)>;

// Over the world context: `direct`, or Gloo's ring allgather.
FrameExchange world_exchange(std::shared_ptr<gloo::Context> world, bool direct,
                             std::chrono::milliseconds timeout);

// In two levels: within `host` (this host's shared-memory group, local rank = the grid's l), then
// over `cross` (this local rank's namesakes, cross rank = host index j), `direct` or the ring among
// the hosts; `grid` maps (l, j) to the world rank. `host` and `cross` must outlive the result.
FrameExchange two_level_exchange(common::shm::ShmGroup& host, std::shared_ptr<gloo::Context> cross,
                                 common::shm::HostGrid grid, bool direct,
                                 std::chrono::milliseconds timeout);

// Exchanges `mine` with every one of the `ranks` ranks through `exchange` and throws
// sdk::Error(STRATA_ERR_MISMATCH) when some rank's header differs from rank 0's. When
// `payload_bytes` <= kFoldBytes, `payload` travels in this rank's frame and the frames come back
// (index: rank), the payloads ready to reduce; otherwise the result is empty. The headers agreeing
// means every rank's payload size agrees, so either every rank gets the frames or none does.
std::vector<Frame> check_agreement(const CallHeader& mine, const void* payload,
                                   size_t payload_bytes, int ranks,
                                   const FrameExchange& exchange);

uint64_t digest(const uint64_t* values, size_t count, uint64_t seed = 1469598103934665603ull);

}  // namespace strata::allreduce_gloo
