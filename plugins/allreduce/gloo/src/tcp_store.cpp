#include "tcp_store.hpp"

#include "auth.hpp"
#include "store_protocol.hpp"

#include <strata/plugin.hpp>

#include <cstring>
#include <thread>

namespace strata::allreduce_gloo {
namespace {

using namespace store_protocol;

std::string frame(const std::string& data) { return u32(static_cast<uint32_t>(data.size())) + data; }

// "ranks 2, 3" from keys whose last path component is a rank; other keys by name.
std::string describe_missing(const std::vector<std::string>& keys) {
  std::string ranks, others;
  size_t rank_count = 0;
  for (const std::string& key : keys) {
    const std::string last = key.substr(key.rfind('/') == std::string::npos ? 0 : key.rfind('/') + 1);
    const bool is_rank = !last.empty() && last.find_first_not_of("0123456789") == std::string::npos;
    std::string& list = is_rank ? ranks : others;
    list += (list.empty() ? "" : ", ") + (is_rank ? last : "'" + key + "'");
    rank_count += is_rank;
  }
  if (others.empty()) return (rank_count == 1 ? "rank " : "ranks ") + ranks;
  return "keys " + others + (ranks.empty() ? "" : " and ranks " + ranks);
}

std::string seconds(std::chrono::milliseconds t) {
  const auto ms = t.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

}  // namespace

TcpStore::TcpStore(const Env& env, std::chrono::milliseconds timeout)
    : env_(env), timeout_(timeout) {
  const auto deadline = Clock::now() + timeout;
  try {
    socket_ = connect_to(env.master_ip, env.master_port, deadline);
  } catch (const SocketError& e) {
    sdk::fail(STRATA_ERR_COMM, "gloo rendezvous: cannot reach rank 0's store at " + where() +
                                   " within " + seconds(timeout) + ": " + e.what());
  }
  const auto handshake_deadline = Clock::now() + kHandshakeTimeout;
  Mac proof{};
  std::string client_nonce, rank;
  std::string server_nonce;
  try {
    server_nonce = socket_.read_exact(16, handshake_deadline);
    client_nonce = bytes(random_nonce());
    rank = u32(static_cast<uint32_t>(env.rank));
    const Mac mine = mac(env.secret, "client", server_nonce + client_nonce + rank);
    socket_.write_all(client_nonce + rank + std::string(mine.begin(), mine.end()), handshake_deadline);
    const std::string reply = socket_.read_exact(32, handshake_deadline);
    std::memcpy(proof.data(), reply.data(), proof.size());
  } catch (const SocketError& e) {
    sdk::fail(STRATA_ERR_COMM, "gloo rendezvous: the store at " + where() +
                                   " did not complete the secret exchange (" + e.what() +
                                   "); is it this job's? (STRATA_JOB_SECRET must be the same on "
                                   "every rank)");
  }
  if (!same_mac(proof, mac(env.secret, "server", client_nonce + server_nonce + rank))) {
    sdk::fail(STRATA_ERR_COMM, "gloo rendezvous: the server at " + where() +
                                   " did not prove the job secret; it is not this job's store");
  }
}

std::string TcpStore::where() const {
  return "MASTER_ADDR " + env_.master_addr + ":" + std::to_string(env_.master_port);
}

void TcpStore::lost(const std::exception& e) const {
  sdk::fail(STRATA_ERR_COMM, "gloo rendezvous: lost the store at " + where() + ": " + e.what());
}

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  const auto deadline = Clock::now() + timeout_;
  try {
    socket_.write_all(std::string(1, kSet) + frame(key) + frame({data.begin(), data.end()}), deadline);
    socket_.read_frame(deadline);
  } catch (const SocketError& e) {
    lost(e);
  }
}

std::vector<char> TcpStore::get(const std::string& key) {
  wait({key}, timeout_);
  const auto deadline = Clock::now() + timeout_;
  std::string reply;
  try {
    socket_.write_all(std::string(1, kGet) + frame(key), deadline);
    reply = socket_.read_frame(deadline);
  } catch (const SocketError& e) {
    lost(e);
  }
  if (reply.empty() || reply[0] != '1') sdk::fail(STRATA_ERR_COMM, "gloo rendezvous: key '" + key + "' vanished");
  return {reply.begin() + 1, reply.end()};
}

void TcpStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void TcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  const auto deadline = Clock::now() + timeout;
  std::vector<std::string> missing = keys;
  for (;;) {
    std::string request = std::string(1, kCheck) + u32(static_cast<uint32_t>(missing.size()));
    for (const std::string& key : missing) request += frame(key);
    std::string reply;
    try {
      socket_.write_all(request, Clock::now() + timeout_);
      reply = socket_.read_frame(Clock::now() + timeout_);
    } catch (const SocketError& e) {
      lost(e);
    }
    std::vector<std::string> still;
    for (uint32_t i = 0, n = read_u32(reply); i < n; ++i) still.push_back(missing.at(read_u32(reply, 4 + 4 * i)));
    missing.swap(still);
    if (missing.empty()) return;
    if (Clock::now() >= deadline) {
      sdk::fail(STRATA_ERR_COMM, "gloo rendezvous: " + describe_missing(missing) +
                                     " did not arrive within " + seconds(timeout) + " (" + where() + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace strata::allreduce_gloo
