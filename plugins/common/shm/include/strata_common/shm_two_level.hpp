// strata_common/shm_two_level.hpp — the two-level allreduce across hosts, for a comm plugin with a
// shared-memory group per host (`host`, the same number of ranks L on every host) and its own
// transport across hosts: NCCL's and Horovod's split, where every local rank carries 1/L of the
// message across the network instead of one leader per host carrying all of it.
//  1. reduce-scatter within the host through shared memory: local rank r ends with block r of the
//     host's sum (blocks of count / L elements);
//  2. `across(block, n)`: the plugin allreduces those n elements in place with the same local rank
//     on the other hosts (L cross-host allreduces at once);
//  3. allgather of the blocks within the host through shared memory.
// The count % L elements after the last whole block are reduced within the host, across hosts by
// local rank 0 and broadcast within the host. Every rank ends with the same bits (each block is
// one cross-host allreduce's result, copied); the sum order differs from a flat allreduce's, so
// floating-point results equal the flat ones up to rounding (integers, MIN and MAX exactly).
// `op` AVG is summed (the caller divides once afterwards, as on its flat path). Scratch for one
// block is accounted to `memory` (STRATA_MEM_COMM_BUFFERS) while the call runs.
#pragma once

#include "shm_group.hpp"

#include <strata/plugin.hpp>

#include <cstdint>
#include <functional>

namespace strata::common::shm {

void two_level_allreduce(ShmGroup& host, const sdk::Host& memory, void* data, uint64_t count,
                         int32_t dtype, int32_t op,
                         const std::function<void(void* data, uint64_t count)>& across);

}  // namespace strata::common::shm
