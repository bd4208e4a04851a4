#include "tcp_store.hpp"

#include "store_protocol.hpp"

#include <strata_common/job_secret.hpp>
#include <strata/plugin.hpp>

#include <cstring>
#include <thread>

namespace strata::allreduce_gloo {
namespace {

using namespace store_protocol;
// The shared TCP socket and job-secret proofs (plugins/common/net), also used by the NCCL plugin.
using namespace common::net;

std::string frame(const std::string& data) { return u32(static_cast<uint32_t>(data.size())) + data; }

// The rank a rendezvous key stands for: connectFullMesh's "<prefix>/<r>" and "<prefix>/rank_<r>";
// -1 for other keys.
int key_rank(const std::string& key) {
  const size_t slash = key.rfind('/');
  std::string last = key.substr(slash == std::string::npos ? 0 : slash + 1);
  if (last.rfind("rank_", 0) == 0) last = last.substr(5);
  if (last.empty() || last.size() > 9 || last.find_first_not_of("0123456789") != std::string::npos) {
    return -1;
  }
  return std::stoi(last);
}

std::string prefix_of(const std::string& key) {
  const size_t slash = key.rfind('/');
  return slash == std::string::npos ? "" : key.substr(0, slash + 1);
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
    client_nonce = bytes(random_nonce(kSecretErrorPrefix));
    rank = u32(static_cast<uint32_t>(env.rank));
    const Mac mine =
        job_mac(kSecretErrorPrefix, env.secret, "client", server_nonce + client_nonce + rank);
    socket_.write_all(client_nonce + rank + std::string(mine.begin(), mine.end()), handshake_deadline);
    const std::string reply = socket_.read_exact(32, handshake_deadline);
    std::memcpy(proof.data(), reply.data(), proof.size());
  } catch (const SocketError& e) {
    sdk::fail(STRATA_ERR_COMM, "gloo rendezvous: the store at " + where() +
                                   " did not complete the secret exchange (" + e.what() +
                                   "); is it this job's? (STRATA_JOB_SECRET must be the same on "
                                   "every rank)");
  }
  const Mac expected =
      job_mac(kSecretErrorPrefix, env.secret, "server", client_nonce + server_nonce + rank);
  if (!same_mac(proof, expected)) {
    sdk::fail(STRATA_ERR_COMM, "gloo rendezvous: the server at " + where() +
                                   " did not prove the job secret; it is not this job's store");
  }
}

std::string TcpStore::where() const {
  return "MASTER_ADDR " + env_.master_addr + ":" + std::to_string(env_.master_port);
}

void TcpStore::lost(const std::exception& e) const {
  sdk::fail(STRATA_ERR_COMM, "gloo rendezvous: lost the store at " + where() + " (" + e.what() +
                                 "); rank 0, which serves it, failed or gave up waiting");
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

std::vector<std::string> TcpStore::check(const std::vector<std::string>& keys) {
  std::string request = std::string(1, kCheck) + u32(static_cast<uint32_t>(keys.size()));
  for (const std::string& key : keys) request += frame(key);
  std::string reply;
  try {
    socket_.write_all(request, Clock::now() + timeout_);
    reply = socket_.read_frame(Clock::now() + timeout_);
  } catch (const SocketError& e) {
    lost(e);
  }
  std::vector<std::string> missing;
  for (uint32_t i = 0, n = read_u32(reply); i < n; ++i) missing.push_back(keys.at(read_u32(reply, 4 + 4 * i)));
  return missing;
}

// Gloo waits for one peer's key at a time, so the key it timed out on names only the first absent
// rank: ask the store about every rank's key under the same prefix and name them all.
std::string TcpStore::describe_missing(const std::vector<std::string>& keys) {
  std::vector<std::string> absent = keys;
  if (key_rank(keys.front()) >= 0) {
    // Every rank sets "rank_<r>" first and "<r>" (its addresses) only once all "rank_" keys are
    // there: a rank that connected but waits for others has the first and not the second.
    for (const char* form : {"rank_", ""}) {
      std::vector<std::string> all;
      for (int r = 0; r < env_.size; ++r) all.push_back(prefix_of(keys.front()) + form + std::to_string(r));
      absent = check(all);
      if (!absent.empty()) break;
    }
    if (absent.empty()) absent = keys;
  }
  std::string ranks, others;
  size_t count = 0;
  for (const std::string& key : absent) {
    const int rank = key_rank(key);
    std::string& list = rank >= 0 ? ranks : others;
    list += (list.empty() ? "" : ", ") + (rank >= 0 ? std::to_string(rank) : "'" + key + "'");
    count += rank >= 0;
  }
  if (others.empty()) return (count == 1 ? "rank " : "ranks ") + ranks;
  return "keys " + others + (ranks.empty() ? "" : " and ranks " + ranks);
}

void TcpStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void TcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  const auto deadline = Clock::now() + timeout;
  std::vector<std::string> missing = keys;
  for (;;) {
    missing = check(missing);
    if (missing.empty()) return;
    if (Clock::now() >= deadline) {
      sdk::fail(STRATA_ERR_COMM, "gloo rendezvous: " + describe_missing(missing) +
                                     " did not arrive within " + seconds(timeout) + " (" + where() + ")");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace strata::allreduce_gloo
