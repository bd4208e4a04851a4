#include "gloo_comm.hpp"

#include "errors.hpp"
#include "gloo_channel.hpp"
#include "store_server.hpp"
#include "tcp_store.hpp"

#include <strata_common/config_agreement.hpp>
#include <strata_common/job_secret.hpp>
#include <strata_common/tcp_socket.hpp>

#include <gloo/allgather.h>
#include <gloo/alltoall.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

namespace strata::allreduce_gloo {
namespace {

// The shared TCP socket and job-secret proofs (plugins/common/net), also used by the NCCL plugin.
using namespace common::net;

// Per rank: hostname (<= 64) + '/' + boot id (36) with room to spare, and an IPv4 address.
constexpr size_t kHostIdBytes = 192;

// Distinct per job (derived from the secret) and per instance, so that jobs sharing a FileStore
// directory, and instances sharing one store, never read each other's keys.
std::string key_prefix(const Secret& secret, int instance_number) {
  const Mac tag = job_mac(kSecretErrorPrefix, secret, "prefix", "");
  static const char* hex = "0123456789abcdef";
  std::string out = "strata-";
  for (size_t i = 0; i < 6; ++i) out += hex[tag[i] >> 4], out += hex[tag[i] & 15];
  return out + "/" + std::to_string(instance_number);
}

std::shared_ptr<gloo::Context> connect(gloo::rendezvous::Store& store, const std::string& prefix,
                                       int rank, int size,
                                       std::shared_ptr<gloo::transport::Device>& device,
                                       std::chrono::milliseconds timeout) {
  gloo::rendezvous::PrefixStore scoped(prefix, store);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  context->setTimeout(timeout);
  context->connectFullMesh(scoped, device);
  return context;
}

}  // namespace

std::unique_ptr<gloo::rendezvous::Store> GlooComm::open_store(const Config& config) const {
  if (config.file_store) {
    return translate("gloo rendezvous: store_path '" + config.store_path + "'", [&] {
      return std::make_unique<gloo::rendezvous::FileStore>(config.store_path);
    });
  }
  // Used during the call that opens it only: TcpStore keeps a reference to env_.
  return std::make_unique<TcpStore>(env_, config.timeout);
}

GlooComm::GlooComm(const Env& env, const Config& config, const sdk::Host& host, int instance_number)
    : env_(env), prefix_(key_prefix(env.secret, instance_number)) {
  const std::string& prefix = prefix_;
  // The store listens on MASTER_ADDR itself, where every client connects (with
  // STRATA_NETWORK_INTERFACE the launcher picks MASTER_ADDR on that network); never 0.0.0.0.
  if (!config.file_store && env.rank == 0) {
    server_ = StoreServer::shared(env.master_ip, env.master_port, env.secret, host);
  }
  const std::unique_ptr<gloo::rendezvous::Store> store = open_store(config);
  translate("gloo: creating the TCP device on " + env.bind_ip, [&] {
    gloo::transport::tcp::attr attr;
    attr.hostname = env.bind_ip;
    device_ = gloo::transport::tcp::CreateDevice(attr);
  });
  translate("gloo rendezvous", [&] {
    world_ = connect(*store, prefix + "/world", env.rank, env.size, device_, config.timeout);
  });
  authenticate_pairs(world_, "pair", "rank");
  // Before anything that depends on the config (the hierarchy's contexts, the shared memory):
  // ranks given different ones would otherwise wait for each other in different rendezvous.
  const GlooChannel channel(world_, config.timeout, "comparing the ranks' configs");
  common::config::require_same_on_every_rank(
      "gloo", wire_summary(config), env.size,
      [&](const void* mine, void* all, size_t bytes) { channel.allgather(mine, all, bytes); });
  learn_hosts();
  hierarchical_ = config.hierarchical == Config::Hierarchy::on ||
                  (config.hierarchical == Config::Hierarchy::automatic && two_level_ &&
                   local_size_ > 1 && config.shm.enabled);
  if (!hierarchical_) return;
  translate("gloo rendezvous (hierarchical)", [&] {
    if (local_size_ > 1) {
      local_ = connect(*store, prefix + "/local/" + std::to_string(node_), local_rank_,
                       local_size_, device_, config.timeout);
    }
    if (two_level_) {
      cross_ = connect(*store, prefix + "/cross/" + std::to_string(local_rank_), node_, hosts_,
                       device_, config.timeout);
    } else if (hosts_ > 1 && local_rank_ == 0) {
      cross_ = connect(*store, prefix + "/cross", node_, hosts_, device_, config.timeout);
    }
  });
  if (local_) authenticate_pairs(local_, "pair/local", "local rank");
  if (cross_) authenticate_pairs(cross_, "pair/cross", "host");
}

GlooComm::GlooComm(const GlooComm& parent, const Env& env, const Config& config,
                   const SplitPlan& plan)
    : env_(env), server_(parent.server_),
      prefix_(parent.prefix_ + "/split" + std::to_string(plan.number) + "/" +
              std::to_string(plan.color)),
      device_(parent.device_) {
  // Hosts in order of their first member; the parent's identities need no new exchange.
  std::vector<int> hosts;
  for (const int p : plan.members) {
    const auto at = static_cast<size_t>(p);
    rank_addresses_.push_back(parent.rank_addresses_.at(at));
    const int host = parent.rank_hosts_.at(at);
    const auto it = std::find(hosts.begin(), hosts.end(), host);
    rank_hosts_.push_back(static_cast<int>(it - hosts.begin()));
    if (it == hosts.end()) hosts.push_back(host);
  }
  hosts_ = static_cast<int>(hosts.size());
  node_ = rank_hosts_[static_cast<size_t>(env_.rank)];
  local_rank_ = static_cast<int>(
      std::count(rank_hosts_.begin(), rank_hosts_.begin() + env_.rank, node_));
  local_size_ = static_cast<int>(std::count(rank_hosts_.begin(), rank_hosts_.end(), node_));
  // A connection of its own (the child's rank and size, so that a missing member is named in
  // the child's numbering), closed once connected.
  const std::unique_ptr<gloo::rendezvous::Store> store = open_store(config);
  translate("gloo split: rendezvous of color " + std::to_string(plan.color), [&] {
    world_ = connect(*store, prefix_ + "/world", env_.rank, env_.size, device_, config.timeout);
  });
  // The label names the group, so an answer cannot be replayed from another context.
  authenticate_pairs(world_, "pair" + prefix_.substr(prefix_.find('/')), "rank");
}

GlooComm::~GlooComm() = default;

// Every context's pairs are separate TCP connections to ephemeral ports, so each context is
// checked on its own: the world's, and the hierarchical local and cross contexts'. `label` keeps a
// context's answers from being replayed in another (ranks are the context's own numbering).
void GlooComm::authenticate_pairs(const std::shared_ptr<gloo::Context>& context,
                                  const std::string& label, const std::string& peer_kind) {
  const int self = context->rank;
  const auto n = static_cast<size_t>(context->size);
  if (n == 1) return;
  std::vector<unsigned char> mine(n * 16), theirs(n * 16);
  for (size_t peer = 0; peer < n; ++peer) {
    const Nonce nonce = random_nonce(kSecretErrorPrefix);
    std::memcpy(&mine[peer * 16], nonce.data(), 16);
  }
  // Round 1: a fresh challenge to every peer. Round 2: every peer's answer to ours.
  std::vector<unsigned char> answers(n * 32), received(n * 32);
  translate("gloo: authenticating the connections between " + peer_kind + "s", [&] {
    gloo::AlltoallOptions round1(context);
    round1.setInput(mine.data(), mine.size());
    round1.setOutput(theirs.data(), theirs.size());
    gloo::alltoall(round1);
    for (size_t peer = 0; peer < n; ++peer) {
      const std::string challenge(reinterpret_cast<char*>(&theirs[peer * 16]), 16);
      const Mac answer = job_mac(kSecretErrorPrefix, env_.secret, label,
                                 challenge + u32(static_cast<uint32_t>(self)) +
                                     u32(static_cast<uint32_t>(peer)));
      std::memcpy(&answers[peer * 32], answer.data(), 32);
    }
    gloo::AlltoallOptions round2(context);
    round2.setInput(answers.data(), answers.size());
    round2.setOutput(received.data(), received.size());
    gloo::alltoall(round2);
  });
  for (size_t peer = 0; peer < n; ++peer) {
    if (static_cast<int>(peer) == self) continue;
    const std::string challenge(reinterpret_cast<char*>(&mine[peer * 16]), 16);
    const Mac expected = job_mac(kSecretErrorPrefix, env_.secret, label,
                                 challenge + u32(static_cast<uint32_t>(peer)) +
                                     u32(static_cast<uint32_t>(self)));
    Mac got{};
    std::memcpy(got.data(), &received[peer * 32], 32);
    if (!same_mac(got, expected)) {
      sdk::fail(STRATA_ERR_COMM, "gloo: the connection to " + peer_kind + " " +
                                     std::to_string(peer) +
                                     " did not prove the job secret (is something other than "
                                     "that rank connected to this rank's Gloo port?)");
    }
  }
}

// Each rank contributes a record: its host identity, then (at kAddressOffset) its device address.
void GlooComm::learn_hosts() {
  constexpr size_t kAddressOffset = kHostIdBytes - 16;  // "255.255.255.255" and its NUL
  const auto n = static_cast<size_t>(env_.size);
  const std::string my_id = env_.host_id.substr(0, kAddressOffset - 1);
  std::vector<char> mine(kHostIdBytes, '\0');
  std::memcpy(mine.data(), my_id.data(), my_id.size());
  std::memcpy(&mine[kAddressOffset], env_.bind_ip.data(), std::min<size_t>(env_.bind_ip.size(), 15));
  std::vector<char> records = mine;
  if (n > 1) {
    records.resize(n * kHostIdBytes);
    translate("gloo: exchanging host names", [&] {
      gloo::AllgatherOptions options(world_);
      options.setInput(mine.data(), mine.size());
      options.setOutput(records.data(), records.size());
      gloo::allgather(options);
    });
  }
  std::vector<std::string> hosts;  // distinct identities, in order of first rank
  std::vector<int> ranks_on;        // ranks per host, in the same order
  std::vector<std::pair<int, int>> places;  // every rank's (local rank, host index)
  for (size_t r = 0; r < n; ++r) {
    const std::string id(&records[r * kHostIdBytes]);
    rank_addresses_.emplace_back(&records[r * kHostIdBytes + kAddressOffset]);
    const auto it = std::find(hosts.begin(), hosts.end(), id);
    if (it == hosts.end()) {
      places.emplace_back(0, static_cast<int>(hosts.size()));
      hosts.push_back(id);
      ranks_on.push_back(1);
    } else {
      const auto host = static_cast<size_t>(it - hosts.begin());
      places.emplace_back(ranks_on[host]++, static_cast<int>(host));
    }
    rank_hosts_.push_back(places.back().second);
    if (id != my_id) continue;
    if (static_cast<int>(r) < env_.rank) ++local_rank_;
    if (static_cast<int>(r) != env_.rank) ++local_size_;
    if (static_cast<int>(r) == env_.rank) {
      node_ = static_cast<int>(std::find(hosts.begin(), hosts.end(), id) - hosts.begin());
    }
  }
  hosts_ = static_cast<int>(hosts.size());
  two_level_ = hosts_ > 1 && std::count(ranks_on.begin(), ranks_on.end(), ranks_on[0]) == hosts_;
  if (!two_level_) return;
  // The cross contexts number the hosts by node_, so (local rank l, host j) is cross rank j of
  // local rank l's context.
  host_grid_.assign(n, -1);
  for (size_t r = 0; r < n; ++r) {
    host_grid_[static_cast<size_t>(places[r].first) * static_cast<size_t>(hosts_) +
               static_cast<size_t>(places[r].second)] = static_cast<int>(r);
  }
}

std::string GlooComm::ranks_at(const std::string& message) const {
  const size_t open = message.rfind("[");
  const size_t close = message.find(']', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return "";
  const std::string address = message.substr(open + 1, close - open - 1);
  std::string ranks;
  size_t count = 0;
  for (size_t r = 0; r < rank_addresses_.size(); ++r) {
    if (static_cast<int>(r) == env_.rank || rank_addresses_[r] != address) continue;
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    ++count;
  }
  if (count == 0) return "";
  return count == 1 ? "the peer at " + address + " is rank " + ranks
                    : "the peer at " + address + " is one of ranks " + ranks;
}

}  // namespace strata::allreduce_gloo
