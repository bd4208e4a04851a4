// The job's Gloo contexts over one TCP device: the world, and for hierarchical allreduces the
// ranks on this host (local) and the ranks of this local rank on every host (cross; where the hosts
// hold different numbers of ranks, the first rank of every host only). A split's child (ABI 1.10)
// is a GlooComm of its own over the same device and store: one context among its members.
//
// Construction is the rendezvous: rank 0 serves the TCP store (or every rank uses Gloo's FileStore
// on a shared directory), every rank connects its pairs (connectFullMesh), then the pairs are
// authenticated (below) and the ranks exchange host identities to learn local rank and size.
//
// Why the pairs are authenticated: Gloo's TCP pairs are plain connections to ephemeral ports
// whose addresses went through the store. The store proves the job secret, but anyone who can
// reach a pair's port could connect first. So every rank sends each peer a fresh nonce, and each
// answers with HMAC(secret, "pair", nonce | sender | receiver) over the pair itself; a wrong
// answer fails create() naming the peer. This proves that every pair's far end holds the secret;
// it does not encrypt or sign later traffic (this libgloo has no TLS transport).
#pragma once

#include "config.hpp"
#include "env.hpp"

#include <strata/plugin.hpp>

#include <gloo/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/device.h>

#include <memory>
#include <string>
#include <vector>

namespace strata::allreduce_gloo {

class StoreServer;

// One rank's part in a split (ABI 1.10) of a GlooComm: computed on every member alike from the
// gathered (color, key) pairs.
struct SplitPlan {
  int number = 0;            // the parent's split count before this one (the same on every rank)
  int color = 0;             // >= 0
  std::vector<int> members;  // the parent ranks of the color, in child rank order
  int rank = 0;              // this rank's index in members
};

class GlooComm {
 public:
  // `instance_number` counts creates in this process, the same on every rank; it keeps the keys
  // of several instances sharing one store apart.
  GlooComm(const Env& env, const Config& config, const sdk::Host& host, int instance_number);
  // A child for `plan` (split()): its own context among plan.members over a new connection to the
  // parent's store (under the parent's key prefix + "/split<number>/<color>"), on the parent's
  // device, its pairs authenticated; hosts, local rank and size from the parent's host
  // identities. `env` is the parent's with the child's rank and size. Not hierarchical. Collective
  // over the members. Keeps the device and rank 0's store server alive while it lives.
  GlooComm(const GlooComm& parent, const Env& env, const Config& config, const SplitPlan& plan);
  ~GlooComm();
  GlooComm(const GlooComm&) = delete;
  GlooComm& operator=(const GlooComm&) = delete;

  int rank() const { return env_.rank; }
  int size() const { return env_.size; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  int hosts() const { return hosts_; }
  // Several hosts, each with the same number of ranks: the two-level allreduce's slices line up,
  // and every rank has a cross context (when hierarchical).
  bool two_level() const { return two_level_; }
  // Whether the collectives run hierarchically (config `hierarchical`, "auto" resolved here: on
  // where two_level() with more than one rank per host and shared memory allowed). The same on
  // every rank. Never for a split's child.
  bool hierarchical() const { return hierarchical_; }
  // Two-level only: the rank of local rank l on host j (cross()'s rank j) is
  // host_grid()[l * hosts() + j]. Empty otherwise.
  const std::vector<int>& host_grid() const { return host_grid_; }
  const Env& env() const { return env_; }
  const std::shared_ptr<gloo::Context>& world() const { return world_; }
  // Hierarchical contexts: null when not hierarchical, or when this rank's group has one rank
  // (cross: also, with uneven hosts, on ranks that are not their host's first).
  const std::shared_ptr<gloo::Context>& local() const { return local_; }
  const std::shared_ptr<gloo::Context>& cross() const { return cross_; }
  // For a Gloo error naming a peer "[a.b.c.d]:port": "the peer at a.b.c.d is rank 2" (or "one of
  // ranks 1, 3" when several ranks share that address); "" when it names none we know.
  std::string ranks_at(const std::string& message) const;
  // The number of the next split of this comm (every rank counts every split, color or not).
  int next_split() { return splits_++; }
  // Every rank's host, as an index in order of each host's first rank.
  const std::vector<int>& rank_hosts() const { return rank_hosts_; }

 private:
  // A new connection to the job's store (rank 0's TCP store, or the FileStore).
  std::unique_ptr<gloo::rendezvous::Store> open_store(const Config& config) const;
  void learn_hosts();
  // Each peer of `context` proves the job secret over its pair (HMAC over a fresh nonce, `label`
  // and both context ranks); fails naming the `peer_kind` ("rank", "local rank", "host") that
  // does not.
  void authenticate_pairs(const std::shared_ptr<gloo::Context>& context, const std::string& label,
                          const std::string& peer_kind);

  Env env_;
  std::shared_ptr<StoreServer> server_;  // rank 0 with the TCP store (shared with children)
  std::string prefix_;  // this comm's store keys: "strata-<job>/<instance>[/split<n>/<color>...]"
  int splits_ = 0;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> world_, local_, cross_;
  std::vector<std::string> rank_addresses_;  // every rank's device address, by rank
  std::vector<int> rank_hosts_;              // every rank's host index, by rank
  int local_rank_ = 0;
  int local_size_ = 1;
  int node_ = 0;  // index of this rank's host, in order of each host's first rank
  int hosts_ = 1;
  bool two_level_ = false;
  bool hierarchical_ = false;
  std::vector<int> host_grid_;
};

}  // namespace strata::allreduce_gloo
