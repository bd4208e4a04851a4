#include "tcp_bootstrap.hpp"

#include <strata_common/job_secret.hpp>
#include <strata_common/tcp_socket.hpp>
#include <strata/plugin.hpp>

#include <cstdlib>
#include <string>
#include <vector>

namespace strata::allreduce_nccl {
namespace {

// The socket and the secret proofs are the SDK's (shared with the gloo plugin's store).
using common::net::Clock;
using common::net::Socket;
using common::net::SocketError;

constexpr size_t kNonceBytes = std::tuple_size_v<common::net::Nonce>;
constexpr size_t kMacBytes = std::tuple_size_v<common::net::Mac>;
// Names the plugin in job_secret.hpp's errors.
constexpr const char kSecretErrorPrefix[] = "allreduce-nccl";
// How long one connection has to finish the exchange before rank 0 hangs up on it.
constexpr std::chrono::seconds kHandshakeTimeout{5};

[[noreturn]] void bad_env(const std::string& message) {
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "allreduce-nccl: bootstrap tcp: " + message);
}

}  // namespace

TcpRendezvous read_tcp_rendezvous() {
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  const char* secret = std::getenv("STRATA_JOB_SECRET");
  if (addr == nullptr || *addr == '\0')
    bad_env("MASTER_ADDR is not set; expected rank 0's host (strata-run sets it)");
  if (port == nullptr || *port == '\0')
    bad_env("MASTER_PORT is not set; expected a TCP port (strata-run sets it)");
  TcpRendezvous r;
  r.where = std::string(addr) + ":" + port;
  char* end = nullptr;
  const long number = std::strtol(port, &end, 10);
  if (*end != '\0' || number < 1 || number > 65535) {
    bad_env(std::string("MASTER_PORT='") + port + "': expected a TCP port (1-65535)");
  }
  r.port = static_cast<uint16_t>(number);
  try {
    r.ip = common::net::resolve_ipv4(addr);
  } catch (const SocketError& e) {
    bad_env(std::string("MASTER_ADDR='") + addr +
            "': expected an IPv4 address or a resolvable name (" + e.what() + ")");
  }
  const std::string expected = "expected 64 hex digits, made per job by strata-run";
  const std::string hex = secret != nullptr ? secret : "";
  if (hex.size() != 64)
    bad_env("STRATA_JOB_SECRET is " + std::string(hex.empty() ? "not set" : "malformed") + "; " +
            expected);
  for (size_t i = 0; i < 64; i += 2) {
    char* stop = nullptr;
    const std::string pair = hex.substr(i, 2);
    const long byte = std::strtol(pair.c_str(), &stop, 16);
    if (*stop != '\0' || pair[0] == '-' || pair[0] == '+')
      bad_env("STRATA_JOB_SECRET is not hexadecimal; " + expected);
    r.secret.push_back(static_cast<char>(byte));
  }
  return r;
}

namespace {

std::string nonce() { return common::net::bytes(common::net::random_nonce(kSecretErrorPrefix)); }

common::net::Mac mac(const std::string& secret, const char* label, const std::string& message) {
  return common::net::job_mac(kSecretErrorPrefix, secret, label, message);
}

std::string id_bytes(const ncclUniqueId& id) {
  return std::string(id.internal, sizeof id.internal);
}

// Rank 0: one connection's exchange. Returns the rank it served, or -1 for a peer that did not
// prove the secret or asked as a rank out of range or already served (it is hung up on).
int serve_one(const Socket& peer, const TcpRendezvous& r, const ncclUniqueId& id,
              const std::vector<bool>& served) {
  const auto deadline = Clock::now() + kHandshakeTimeout;
  const std::string server_nonce = nonce();
  peer.write_all(server_nonce, deadline);
  const std::string hello = peer.read_exact(kNonceBytes + 4 + kMacBytes, deadline);
  const std::string client_nonce = hello.substr(0, kNonceBytes);
  const std::string rank_bytes = hello.substr(kNonceBytes, 4);
  const uint32_t rank = common::net::read_u32(rank_bytes);
  const common::net::Mac proof =
      mac(r.secret, "nccl-id-client", server_nonce + client_nonce + rank_bytes);
  if (!common::net::same_mac(hello.substr(kNonceBytes + 4), proof) || rank == 0 ||
      rank >= served.size() || served[rank]) {
    return -1;
  }
  const common::net::Mac answer =
      mac(r.secret, "nccl-id-server", client_nonce + server_nonce + rank_bytes + id_bytes(id));
  peer.write_all(common::net::bytes(answer) + id_bytes(id), deadline);
  return static_cast<int>(rank);
}

void serve(const ncclUniqueId& id, const TcpRendezvous& r, int size,
           std::chrono::milliseconds timeout) {
  Socket listener;
  try {
    listener = common::net::listen_on(r.ip, r.port);
  } catch (const SocketError& e) {
    sdk::fail(STRATA_ERR_COMM,
              "allreduce-nccl: bootstrap tcp: rank 0 cannot serve the NCCL unique id at " +
                  r.where + ": cannot listen: " + e.what());
  }
  const auto deadline = Clock::now() + timeout;
  std::vector<bool> served(static_cast<size_t>(size), false);
  served[0] = true;
  for (int left = size - 1; left > 0;) {
    Socket peer = listener.accept_until(deadline);
    if (peer.fd() < 0) break;
    try {
      const int rank = serve_one(peer, r, id, served);
      if (rank > 0) {
        served[static_cast<size_t>(rank)] = true;
        --left;
      }
    } catch (const SocketError&) {
      // A peer that stalls or hangs up mid-exchange is dropped; a real rank retries.
    }
  }
  std::string missing;
  for (size_t rank = 1; rank < served.size(); ++rank) {
    if (!served[rank]) missing += (missing.empty() ? "" : ", ") + std::to_string(rank);
  }
  if (!missing.empty()) {
    sdk::fail(STRATA_ERR_COMM,
              "allreduce-nccl: bootstrap tcp: rank 0 served the NCCL unique id at " + r.where +
                  " for " + std::to_string(timeout.count() / 1000) +
                  " s (timeout_seconds), but rank(s) " + missing + " never fetched it");
  }
}

void fetch(ncclUniqueId& id, const TcpRendezvous& r, int rank, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::string last;
  // Retried as a whole: rank 0 hangs up on a connection it took while serving someone else late.
  while (Clock::now() < deadline) {
    try {
      Socket s = common::net::connect_to(r.ip, r.port, deadline);
      const auto step = std::min(deadline, Clock::now() + kHandshakeTimeout);
      const std::string server_nonce = s.read_exact(kNonceBytes, step);
      const std::string client_nonce = nonce();
      const std::string rank_bytes = common::net::u32(static_cast<uint32_t>(rank));
      s.write_all(client_nonce + rank_bytes +
                      common::net::bytes(
                      mac(r.secret, "nccl-id-client", server_nonce + client_nonce + rank_bytes)),
                  step);
      const std::string answer = s.read_exact(kMacBytes + sizeof id.internal, step);
      const std::string bytes = answer.substr(kMacBytes);
      if (!common::net::same_mac(
              answer.substr(0, kMacBytes),
              mac(r.secret, "nccl-id-server", client_nonce + server_nonce + rank_bytes + bytes))) {
        sdk::fail(STRATA_ERR_COMM,
                  "allreduce-nccl: bootstrap tcp: the server at " + r.where +
                      " does not know this job's STRATA_JOB_SECRET; refusing its NCCL unique id");
      }
      bytes.copy(id.internal, sizeof id.internal);
      return;
    } catch (const SocketError& e) {
      last = e.what();
    }
  }
  sdk::fail(STRATA_ERR_COMM, "allreduce-nccl: bootstrap tcp: rank " + std::to_string(rank) +
                                 " could not fetch the NCCL unique id from rank 0 at " + r.where +
                                 " within " + std::to_string(timeout.count() / 1000) +
                                 " s (timeout_seconds): " + last);
}

}  // namespace

void exchange_id_over_tcp(ncclUniqueId& id, int rank, int size, std::chrono::milliseconds timeout,
                          const TcpRendezvous& r) {
  if (rank == 0) {
    serve(id, r, size, timeout);
  } else {
    fetch(id, r, rank, timeout);
  }
}

}  // namespace strata::allreduce_nccl
