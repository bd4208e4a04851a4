// strata_common/config_agreement.hpp — whether every rank of a job was given the same comm config.
// The keys that decide what goes on the wire (an algorithm, a piece size, which path a collective
// of a given size takes) must be the same on every rank: otherwise ranks exchange messages of
// different sizes or through different paths, and the job hangs until a timeout, is ended inside
// the transport library, or computes wrong results. Each rank normally reads the same manifest,
// but nothing forces a launcher to hand every host the same file, so a comm plugin checks once at
// create(), over its own transport. Library strata_common_config.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace strata::common::config {

// Bytes of the record each rank contributes; a longer summary is an internal error (a plugin
// that outgrows it grows the record), never cut short.
inline constexpr size_t kSummaryBytes = 256;

// Every rank's `summary` (this rank's wire-relevant keys, "key value, key value, ...") goes to
// every rank through `allgather(mine, all, bytes)` (every rank's `bytes` at `mine` into `all`, in
// rank order; collective); with `size` 1 nothing is exchanged. When some rank's differs from rank
// 0's, every rank throws the same sdk::Error (STRATA_ERR_INVALID_ARGUMENT):
//   "<context>: ranks were given different configs: rank 0 has {<summary>}, rank 2 has
//    {<summary>}; give every rank the same comm.config"
// naming the lowest such rank. Errors of `allgather` pass through.
void require_same_on_every_rank(
    const std::string& context, const std::string& summary, int size,
    const std::function<void(const void* mine, void* all, size_t bytes)>& allgather);

}  // namespace strata::common::config
