// strata_common/shm_two_level.hpp — two-level collectives across hosts, for a comm plugin with a
// shared-memory group per host (`host`, the same number of ranks L on every host) and its own
// transport across hosts: NCCL's and Horovod's split, where every local rank carries 1/L of the
// message across the network instead of one leader per host carrying all of it.
//  1. reduce-scatter of `send` within the host through shared memory: local rank r ends with
//     block r of the host's sum (blocks of count / L elements);
//  2. `across(block, n)`: the plugin allreduces those n elements in place with the same local rank
//     on the other hosts (L cross-host allreduces at once);
//  3. allgather of the blocks within the host through shared memory, into `recv`.
// `send` may equal `recv`. Reading `send` directly (rather than a copy of it in `recv`, which a
// flat in-place allreduce needs) saves a copy of the whole message per rank.
// The count % L elements after the last whole block are reduced within the host, across hosts by
// local rank 0 and broadcast within the host. Every rank ends with the same bits (each block is
// one cross-host allreduce's result, copied); the sum order differs from a flat allreduce's, so
// floating-point results equal the flat ones up to rounding (integers, MIN and MAX exactly).
// `op` AVG is summed (the caller divides once afterwards, as on its flat path).
// The message goes through the three steps in pieces of `piece` elements (the plugin's
// chunk_bytes, rounded down to a multiple of L and at least L), each piece's steps back to back,
// so that a piece is still in cache when its next step reads it. Measured on 2 x 2 namespace
// hosts (bench/allreduce run_multinode.sh, gloo-hier column, 2026-12-07): one 64 MiB piece spent
// 20-85 ms in its reduce-scatter and 10-58 ms in its allgather, and ran at 0.55-0.71x the flat
// ring; 1 MiB pieces at 0.93-1.66x it from 4 MiB up (4 MiB pieces 0.75-1.14x). Each rank's block
// of a piece stays in `recv` from the reduce-scatter to the allgather: no scratch.
#pragma once

#include "shm_group.hpp"

#include <strata/comm/scratch.hpp>
#include <strata/plugin.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

namespace strata::common::shm {

// The widest element of any dtype (f64, i64): the scratch bounds below hold at least one.
inline constexpr uint64_t kWidestElementBytes = 8;

void two_level_allreduce(ShmGroup& host, const void* send, void* recv, uint64_t count,
                         uint64_t piece, int32_t dtype, int32_t op,
                         const std::function<void(void* data, uint64_t count)>& across);

// The most bytes `across` gets at once in two_level_allreduce (one piece's block), for every
// dtype, where `piece` is chunk_bytes / element size (at least 1) and the host holds `local`
// ranks: what a plugin keeps for its cross-host step's scratch.
inline uint64_t two_level_block_bytes(uint64_t chunk_bytes, int local) {
  return std::max<uint64_t>(chunk_bytes / static_cast<uint64_t>(local), kWidestElementBytes);
}

// Where the job's ranks sit for reduce_scatter and allgather, whose blocks belong to global ranks:
// `hosts` hosts of `local` ranks each; the rank of local rank l on the j-th host (in the order of
// the plugin's cross-host group of local rank l) is global rank `global[l * hosts + j]`.
struct HostGrid {
  int hosts = 1;
  int local = 1;
  std::vector<int> global;
  int at(int l, int j) const { return global[static_cast<size_t>(l) * hosts + j]; }
};

// reduce_scatter in two levels: global rank g's block is elements [g * count, (g + 1) * count) of
// `send`; this rank's ends in `recv`. The blocks go in rounds that move at most `chunk_bytes` of
// the whole message (the plugin's chunk_bytes; at least one element of each block per round),
// through `scratch` (one round's packed blocks: two_level_round_bytes() holds any round; the
// plugin keeps it from create() to destroy(), so that no call allocates). Each rank sends about
// (hosts - 1) / hosts of its slice, 1/L of the input, across hosts, where a flat ring sends
// (n - 1) / n of the whole input over the network.
// Per round:
//  1. the blocks are packed so that local rank l's slice holds the blocks of the ranks of local
//     rank l, in host order (one copy), and reduce-scattered within the host through shared memory
//     (`op` AVG summed, as in the allreduce), this rank's slice left in place in the packing;
//  2. `across(slice, recv, n)`: the plugin reduce-scatters the slice (hosts blocks of n; it may
//     reduce in it) with the same local rank on the other hosts into `recv`: the j-th host's rank
//     gets block j, its own.
// Sum order: within the host in rank order, then the plugin's across hosts (as the two-level
// allreduce). `recv` may be a block of `send` (in place: this rank's, or the first): a round writes
// only elements the packing already read.
void two_level_reduce_scatter(
    ShmGroup& host, const sdk::comm::KeptScratch& scratch, const HostGrid& grid, const void* send,
    void* recv, uint64_t count, uint64_t chunk_bytes, int32_t dtype, int32_t op,
    const std::function<void(void* slice, void* block, uint64_t count)>& across);

// allgather in two levels, the reverse, in the same rounds: `across(block, slice, n)` allgathers
// this rank's n elements with the same local rank on the other hosts (slice: hosts blocks, host
// order, written where this rank's slice goes in the packing), the slices are allgathered within
// the host through shared memory and unpacked into `recv`, where global rank g's block is elements
// [g * count, (g + 1) * count). `send` may be this rank's block in `recv` (in place). `scratch`
// as there.
void two_level_allgather(
    ShmGroup& host, const sdk::comm::KeptScratch& scratch, const HostGrid& grid, const void* send,
    void* recv, uint64_t count, uint64_t chunk_bytes, int32_t dtype,
    const std::function<void(const void* block, void* slice, uint64_t count)>& across);

// The bytes of one round's packing in two_level_reduce_scatter and two_level_allgather, for every
// dtype: a round moves at most chunk_bytes of the whole message, or one element per rank.
inline uint64_t two_level_round_bytes(uint64_t chunk_bytes, const HostGrid& grid) {
  const auto ranks = static_cast<uint64_t>(grid.hosts) * static_cast<uint64_t>(grid.local);
  return std::max<uint64_t>(chunk_bytes, ranks * kWidestElementBytes);
}

}  // namespace strata::common::shm
