// What each shared-memory collective does per round (shm_group.hpp has the scheme). Phase p
// stages into buffers p % 2; after reach(p) a rank reads what everyone staged for p.
//
// allreduce, round k of m elements, split into one part per rank (part boundaries on cache lines):
//   stage:  copy my input of round k into my staging buffer, except my own part (only I read it);
//   reach;
//   reduce: my part of round k = fold over ranks in rank order (my part read straight from my
//           input), written to my output and to the shared result buffer;
//   gather: copy the other parts of round k - 1 from the result buffer into my output (the ranks
//           wrote them before reaching this phase).
// One more phase after the last round gathers its parts. Per rank and element that is one read
// and one write of private memory plus cache-resident traffic: the least an allreduce through
// shared memory can move.
//
// reduce_scatter, round k: stage my input's round-k piece of every other rank's block; reach; fold
// the ranks' pieces of my block straight into my output.
// allgatherv, round k: stage my round-k piece; reach; copy everyone else's piece into place.
// broadcast, round k: the root stages its piece; reach; the others copy it out.
#include <strata_common/shm_group.hpp>

#include <strata/plugin.hpp>

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif
#include <vector>

namespace strata::common::shm {
namespace {

constexpr size_t kCacheLine = 64;

// memcpy, except that an empty copy may name null pointers (an empty buffer's data).
void copy(void* dst, const void* src, uint64_t bytes) {
  if (bytes > 0) std::memcpy(dst, src, bytes);
}

// Messages from this size write the caller's buffer with non-temporal stores: they no longer fit
// the cache next to the staging buffers, and a streaming store skips the read of each output line
// that an ordinary store makes first (a third of the traffic of a copy). bench/allreduce, 2 ranks,
// three alternating runs: 16 MiB 6.1-6.7 GB/s with, 4.7-6.3 without; at 64-256 MiB the noise of
// this shared VM (2.3-6.7 either way) hides the difference. The amp plugin's casts stream from the
// same size.
constexpr uint64_t kStreamMinBytes = uint64_t{16} << 20;

// copy() with non-temporal stores, for outputs of kStreamMinBytes or more. Call stream_fence()
// before anyone else may read what it wrote: such stores are not ordered by the release stores
// that later publish the result.
void stream_copy(void* dst, const void* src, uint64_t bytes) {
#if defined(__x86_64__)
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  const uint64_t head = std::min<uint64_t>(bytes, (16 - reinterpret_cast<uintptr_t>(out) % 16) % 16);
  copy(out, in, head);
  uint64_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(out + i + 48), d);
  }
  copy(out + i, in + i, bytes - i);
#else
  copy(dst, src, bytes);
#endif
}

void stream_fence() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

// Copies into the caller's buffer, streaming when the whole message is large.
void copy_out(bool stream, void* dst, const void* src, uint64_t bytes) {
  if (stream) {
    stream_copy(dst, src, bytes);
  } else {
    copy(dst, src, bytes);
  }
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Start of rank j's part of a round of m elements split over `ranks`: j * m / ranks, rounded up
// to a whole cache line of elements so that no two ranks write the same line.
uint64_t part_begin(uint64_t m, int j, int ranks, uint64_t unit) {
  const uint64_t even = m * static_cast<uint64_t>(j) / static_cast<uint64_t>(ranks);
  return std::min(m, ceil_div(even, unit) * unit);
}

uint64_t hash_counts(const uint64_t* counts, const uint64_t* displs, int ranks) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the values
  auto mix = [&h](uint64_t v) {
    for (int b = 0; b < 8; ++b) {
      h ^= (v >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  for (int r = 0; r < ranks; ++r) {
    mix(counts[r]);
    mix(displs[r]);
  }
  return h;
}

}  // namespace

void ShmGroup::allreduce(const void* send, void* recv, uint64_t count, int32_t dtype,
                         int32_t op) {
  const char* what = "allreduce";
  const size_t es = sdk::dtype_size(dtype);
  if (count * es <= std::min<uint64_t>(kDirectMaxBytes, slot_bytes_)) {
    return direct_allreduce(send, recv, count, dtype, op);
  }
  const uint64_t round_elements = slot_bytes_ / es;
  const uint64_t unit = kCacheLine / es;
  const uint64_t rounds = ceil_div(count, round_elements);
  const uint64_t first = begin({0, int32_t(Kind::allreduce), dtype, op, -1, count, 0}, what);
  const auto* in = static_cast<const char*>(send);
  auto* out = static_cast<char*>(recv);
  const int me = local_rank_;
  std::vector<const void*>& sources = sources_;
  // Streaming: the reduction writes only the shared result buffer, and the gather copies every
  // part, this rank's too, into the caller's buffer with streaming stores.
  const bool stream = count * es >= kStreamMinBytes;

  for (uint64_t k = 0; k <= rounds; ++k) {
    const uint64_t phase = first + k;
    const uint64_t offset = k * round_elements;  // of round k
    const uint64_t m = k < rounds ? std::min(round_elements, count - offset) : 0;
    const uint64_t mine_begin = part_begin(m, me, local_size_, unit);
    const uint64_t mine_end = part_begin(m, me + 1, local_size_, unit);
    if (m > 0) {
      char* stage = staging(me, phase);
      copy(stage, in + offset * es, mine_begin * es);
      copy(stage + mine_end * es, in + (offset + mine_end) * es, (m - mine_end) * es);
    }
    reach(phase, what);
    if (k == 0) check_agreement(what);
    if (m > 0 && mine_end > mine_begin) {
      for (int j = 0; j < local_size_; ++j) {
        sources[j] = j == me ? in + (offset + mine_begin) * es
                             : staging(j, phase) + mine_begin * es;
      }
      char* shared = result(phase) + mine_begin * es;
      kernels_.reduce({sources.data(), local_size_, stream ? shared : out + (offset + mine_begin) * es,
                       stream ? nullptr : shared, mine_end - mine_begin, dtype, op, local_size_});
    }
    if (k == 0) continue;
    // Gather round k - 1's other parts, which its reducers put in result(phase - 1).
    const uint64_t prev_offset = offset - round_elements;
    const uint64_t prev_m = std::min(round_elements, count - prev_offset);
    const char* results = result(phase - 1);
    for (int j = 0; j < local_size_; ++j) {
      if (j == me && !stream) continue;
      const uint64_t b = part_begin(prev_m, j, local_size_, unit);
      const uint64_t e = part_begin(prev_m, j + 1, local_size_, unit);
      copy_out(stream, out + (prev_offset + b) * es, results + b * es, (e - b) * es);
    }
  }
  if (stream) stream_fence();
}

void ShmGroup::direct_allreduce(const void* send, void* recv, uint64_t count, int32_t dtype,
                                int32_t op) {
  const char* what = "allreduce";
  const size_t es = sdk::dtype_size(dtype);
  const uint64_t phase = begin({0, int32_t(Kind::allreduce), dtype, op, -1, count, 0}, what);
  copy(staging(local_rank_, phase), send, count * es);
  reach(phase, what);
  check_agreement(what);
  for (int j = 0; j < local_size_; ++j) {
    sources_[j] = j == local_rank_ ? send : staging(j, phase);
  }
  if (count > 0) {
    kernels_.reduce({sources_.data(), local_size_, recv, nullptr, count, dtype, op, local_size_});
  }
}

void ShmGroup::reduce_scatter(const void* send, void* recv, uint64_t recv_count, int32_t dtype,
                              int32_t op) {
  const char* what = "reduce_scatter";
  const size_t es = sdk::dtype_size(dtype);
  const uint64_t unit = kCacheLine / es;
  // Each staging buffer holds one piece per rank's block.
  const uint64_t piece = std::max<uint64_t>(unit, slot_bytes_ / es / local_size_ / unit * unit);
  const uint64_t rounds = std::max<uint64_t>(1, ceil_div(recv_count, piece));
  const uint64_t first =
      begin({0, int32_t(Kind::reduce_scatter), dtype, op, -1, recv_count, 0}, what);
  const auto* in = static_cast<const char*>(send);
  auto* out = static_cast<char*>(recv);
  const int me = local_rank_;
  std::vector<const void*>& sources = sources_;

  for (uint64_t k = 0; k < rounds; ++k) {
    const uint64_t phase = first + k;
    const uint64_t offset = k * piece;
    const uint64_t m = recv_count > offset ? std::min(piece, recv_count - offset) : 0;
    char* stage = staging(me, phase);
    for (int j = 0; j < local_size_ && m > 0; ++j) {
      if (j == me) continue;
      copy(stage + j * piece * es, in + (j * recv_count + offset) * es, m * es);
    }
    reach(phase, what);
    if (k == 0) check_agreement(what);
    if (m == 0) continue;
    for (int j = 0; j < local_size_; ++j) {
      sources[j] = j == me ? in + (me * recv_count + offset) * es
                           : staging(j, phase) + me * piece * es;
    }
    kernels_.reduce({sources.data(), local_size_, out + offset * es, nullptr, m, dtype, op,
                     local_size_});
  }
}

void ShmGroup::allgatherv(const void* send, void* recv, const uint64_t* counts,
                          const uint64_t* displs, int32_t dtype) {
  const char* what = "allgather";
  const size_t es = sdk::dtype_size(dtype);
  const uint64_t round_elements = slot_bytes_ / es;
  uint64_t total = 0, largest = 0;
  for (int j = 0; j < local_size_; ++j) {
    total += counts[j];
    largest = std::max(largest, counts[j]);
  }
  const uint64_t rounds = std::max<uint64_t>(1, ceil_div(largest, round_elements));
  const uint64_t first = begin({0, int32_t(Kind::allgatherv), dtype, 0, -1, total,
                                hash_counts(counts, displs, local_size_)},
                               what);
  const auto* in = static_cast<const char*>(send);
  auto* out = static_cast<char*>(recv);
  const int me = local_rank_;
  if (in != out + displs[me] * es) copy(out + displs[me] * es, in, counts[me] * es);

  auto piece = [&](int j, uint64_t offset) {
    return counts[j] > offset ? std::min(round_elements, counts[j] - offset) : 0;
  };
  for (uint64_t k = 0; k < rounds; ++k) {
    const uint64_t phase = first + k;
    const uint64_t offset = k * round_elements;
    copy(staging(me, phase), in + offset * es, piece(me, offset) * es);
    reach(phase, what);
    if (k == 0) check_agreement(what);
    for (int j = 0; j < local_size_; ++j) {
      if (j == me) continue;
      copy(out + (displs[j] + offset) * es, staging(j, phase), piece(j, offset) * es);
    }
  }
}

void ShmGroup::broadcast(void* data, uint64_t count, int32_t dtype, int root) {
  const char* what = "broadcast";
  const size_t es = sdk::dtype_size(dtype);
  const uint64_t round_elements = slot_bytes_ / es;
  const uint64_t rounds = std::max<uint64_t>(1, ceil_div(count, round_elements));
  const uint64_t first = begin({0, int32_t(Kind::broadcast), dtype, 0, root, count, 0}, what);
  auto* bytes = static_cast<char*>(data);
  for (uint64_t k = 0; k < rounds; ++k) {
    const uint64_t phase = first + k;
    const uint64_t offset = k * round_elements;
    const uint64_t m = count > offset ? std::min(round_elements, count - offset) : 0;
    if (local_rank_ == root) copy(staging(root, phase), bytes + offset * es, m * es);
    reach(phase, what);
    if (k == 0) check_agreement(what);
    if (local_rank_ != root) copy(bytes + offset * es, staging(root, phase), m * es);
  }
}

void ShmGroup::barrier() {
  const char* what = "barrier";
  const uint64_t first = begin({0, int32_t(Kind::barrier), 0, 0, -1, 0, 0}, what);
  reach(first, what);
  check_agreement(what);
}

}  // namespace strata::common::shm
