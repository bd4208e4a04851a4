// The unique id through a TCP exchange (jobs started by strata-run, without MPI). Rank 0 serves
// its id at MASTER_ADDR:MASTER_PORT until every other rank has fetched it; each rank connects,
// retrying until rank 0 listens. Both sides prove STRATA_JOB_SECRET (HMAC-SHA256 over fresh
// nonces, as the allreduce-gloo plugin's store does), and the server's proof covers the id, so a
// rank never joins a communicator that a process outside the job announced:
//   server -> client  server nonce (16 bytes)
//   client -> server  client nonce (16) | rank (u32 little-endian) | HMAC(s, "nccl-id-client",
//   sn|cn|rank) server -> client  HMAC(s, "nccl-id-server", cn|sn|rank|id) (32) | id (128)
// The server lives only inside create(): no thread, nothing left listening afterwards.
#pragma once

#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace strata::allreduce_nccl {

// Where rank 0 serves and what proves the job: strata-run's MASTER_ADDR, MASTER_PORT and
// STRATA_JOB_SECRET.
struct TcpRendezvous {
  std::string where;  // "MASTER_ADDR:MASTER_PORT" as given, for messages
  std::string ip;     // MASTER_ADDR resolved to dotted IPv4
  uint16_t port = 0;
  std::string secret;  // 32 raw bytes
};

// Reads the three variables; STRATA_ERR_INVALID_ARGUMENT naming one that is missing or malformed.
TcpRendezvous read_tcp_rendezvous();

// Rank 0: serves `id` to ranks 1..size-1. Others: fill `id` from rank 0. STRATA_ERR_COMM naming
// the ranks that never came (rank 0) or the address (others) after `timeout`.
void exchange_id_over_tcp(ncclUniqueId& id, int rank, int size, std::chrono::milliseconds timeout,
                          const TcpRendezvous& rendezvous);

}  // namespace strata::allreduce_nccl
