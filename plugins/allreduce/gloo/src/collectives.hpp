// The collectives of strata_comm_ops on host buffers, over GlooComm's contexts.
//
// Each call validates its arguments on the caller's thread and prepares the request: request.work
// is what runs later, in order, on the instance's progress thread, and request.finish what remains
// afterwards (on the thread that completes the request).
// Every work item first checks that the ranks agree on the call (agreement.hpp), then runs Gloo
// with config.timeout (an allreduce or reduce_scatter of at most kFoldBytes is done by then: its
// payload travelled with the check); Gloo's exceptions become STRATA_ERR_COMM (errors.hpp).
// After a transport failure Gloo's pairs are unusable, so every later collective of the instance fails at once with
// the first failure's message instead of waiting for another timeout.
//
// When every rank runs on one host and shared memory could be set up (shm_setup.hpp), collectives
// whose payload is at least config.shm.min_bytes run over the shared-memory group instead, exactly
// as in allreduce-mpi (plugins/common/shm): the work item is then a call into the group, recorded
// as a "shm_<collective>" span, with no Gloo agreement header (the group checks agreement between
// the ranks in its first phase). config.timeout bounds its waits as it bounds Gloo's (a rank that
// dies is also seen through its pidfd), and after such a failure the group fails every later
// collective at once, as Gloo's pairs do here.
#pragma once

#include "agreement.hpp"
#include "config.hpp"
#include "dtypes.hpp"
#include "gloo_comm.hpp"
#include "request.hpp"
#include "validate.hpp"
#include <strata_common/shm_group.hpp>
#include <strata_common/shm_two_level.hpp>

#include <strata/comm/scratch.hpp>
#include <strata/plugin.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace strata::allreduce_gloo {

// A reduction small enough to travel in the agreement frame (agreement.hpp): `bytes` of `data`
// (as they stand when the work item runs), and what to do with every rank's copy instead of the
// collective itself. The default folds nothing.
struct Fold {
  const void* data = nullptr;
  size_t bytes = ~size_t{0};
  std::function<void(const std::vector<Frame>&)> reduce;
};

class Collectives {
 public:
  // `shm`: the shared-memory group, or nullptr for Gloo only. `host_shm`: the group of this host's
  // ranks for the two-level collectives across hosts, or nullptr. All must outlive this.
  Collectives(const GlooComm& comm, common::shm::ShmGroup* shm, common::shm::ShmGroup* host_shm,
              const sdk::Host& host, const Config& config)
      : comm_(comm), shm_(shm), host_shm_(host_shm), host_(host), config_(config), tracer_(host),
        grid_{comm.hosts(), comm.local_size(), comm.host_grid()},
        hierarchical_(comm.hierarchical() &&
                      (host_shm != nullptr || config.hierarchical == Config::Hierarchy::on)),
        agreement_(agreement_exchange()),
        exchange_scratch_(host, kept_exchange_bytes(comm, config, host_shm != nullptr)),
        round_scratch_(host, host_shm != nullptr
                                 ? common::shm::two_level_round_bytes(config.chunk_bytes, grid_)
                                 : 0) {}

  // Whether collectives run hierarchically: comm.hierarchical(), except that "auto" stays flat
  // when the hosts' shared-memory groups could not be set up (then only the form through each
  // host's first rank would remain, which "auto" does not take). The same on every rank
  // (shm::keep_only_if_everyone_has_one).
  bool hierarchical() const { return hierarchical_; }
  // Whether the collectives that have a two-level form (allreduce, reduce_scatter, allgather) take
  // it, and the agreement runs in two levels: where this host's shared-memory group for them
  // exists, which set_up_host_shm makes only when hierarchical, with a cross context on every
  // rank (the hosts hold the same number of ranks). The same on every rank.
  bool two_level() const { return host_shm_ != nullptr; }
  // How many parties the agreement's exchange over TCP has (its direct or ring form is chosen for
  // that many): the hosts in two levels, else every rank.
  int agreement_parties() const { return two_level() ? comm_.hosts() : comm_.size(); }

  void allreduce(const strata_buffer* send, const strata_buffer* recv, int32_t op,
                 Request& request) const;
  void reduce_scatter(const strata_buffer* send, const strata_buffer* recv, int32_t op,
                      Request& request) const;
  void allgather(const strata_buffer* send, const strata_buffer* recv, Request& request) const;
  void allgatherv(const strata_buffer* send, const strata_buffer* recv, const uint64_t* recv_counts,
                  const uint64_t* displs, Request& request) const;
  void broadcast(const strata_buffer* buffer, int32_t root, Request& request) const;
  void barrier(Request& request) const;
  // ABI 1.10, always over Gloo (the shared-memory group has no alltoallv). Checks its arguments
  // (the SDK's alltoallv_args); up to 64 ranks, every rank also checks the whole count matrix
  // from the agreement frames (data_movement.cpp).
  void alltoallv(const strata_coll_args& args, Request& request) const;

  // The same with strata_comm_ops's arguments, as the ops table (strata/comm/ops_table.hpp)
  // calls them.
  void allreduce(const strata_coll_args& a, Request& r) const { allreduce(a.send, a.recv, a.op, r); }
  void reduce_scatter(const strata_coll_args& a, Request& r) const {
    reduce_scatter(a.send, a.recv, a.op, r);
  }
  void allgather(const strata_coll_args& a, Request& r) const { allgather(a.send, a.recv, r); }
  void allgatherv(const strata_coll_args& a, Request& r) const {
    allgatherv(a.send, a.recv, a.recv_counts, a.displs, r);
  }
  void broadcast(const strata_coll_args& a, Request& r) const { broadcast(a.recv, a.root, r); }

  // The agreement check (agreement.hpp) over the instance's exchange: every rank's frame, or
  // STRATA_ERR_MISMATCH. On the work item's thread (or split's, after the queue drained).
  std::vector<Frame> agree(const CallHeader& header, const void* payload,
                           size_t payload_bytes) const {
    return check_agreement(header, payload, payload_bytes, comm_.size(), agreement_);
  }

  // An exchange over the instance's pairs outside a collective (split's agreement), under the same
  // failure latch as the collectives: it fails at once after an earlier transport failure, and
  // its own transport failure fails every later call. On the calling thread, after the queued
  // work has drained.
  void latched_exchange(const char* call, const std::function<void()>& exchange) const {
    throw_if_failed(call);
    latching(exchange);
  }

 private:
  // The first transport failure, read and written by the work items on either thread.
  struct Failure {
    std::mutex mutex;
    std::string message;
  };
  // Throws STRATA_ERR_COMM naming the first transport failure, when there was one.
  void throw_if_failed(const char* call) const;
  // Runs `exchange`; a STRATA_ERR_COMM it throws (a transport error: disagreement leaves the pairs
  // intact) is latched as the failure, with the ranks at the addresses it names, and rethrown so.
  void latching(const std::function<void()>& exchange) const;
  // `body` as a work item: agreement check, error translation, failure latch; with a timeline, one
  // span `span` (a string literal, "gloo_<call>") of `bytes` (the caller's payload) on the
  // progress thread, agreement check included. When `fold` fits the agreement frame, its reduce
  // runs on the gathered frames instead of `body`.
  std::function<void()> guarded(const char* call, const char* span, uint64_t bytes,
                                const CallHeader& header, std::function<void()> body,
                                Fold fold = {}) const;
  // Whether a collective moving `payload_bytes` goes through the shared-memory group.
  bool use_shm(uint64_t payload_bytes) const {
    return shm_ != nullptr && config_.shm.takes(payload_bytes);
  }
  // `work(group)` as the request's work item: one span `span` (a string literal, "shm_<call>") of
  // `bytes` when the job records a timeline.
  template <class Work>
  void on_shm(Request& request, const char* span, uint64_t bytes, Work work) const {
    request.via_shm = true;
    if (!tracer_.enabled()) {
      request.work = [group = shm_, work] { work(*group); };
      return;
    }
    request.work = [tracer = tracer_, group = shm_, span, bytes, work] {
      const int64_t begin = tracer.now();
      work(*group);
      tracer.span(span, begin, -1, bytes);
    };
  }
  // The agreement's exchange, fixed for the instance: in two levels where two_level(), otherwise
  // over the world context.
  FrameExchange agreement_exchange() const {
    const bool direct = config_.direct_agreement_for(agreement_parties());
    if (two_level()) {
      return two_level_exchange(*host_shm_, comm_.cross(), grid_, direct, config_.timeout);
    }
    return world_exchange(comm_.world(), direct, config_.timeout);
  }
  // The whole job's reduction of `input` into `data` (they may be the same), flat or
  // hierarchical (hierarchical()). The two-level form reads `input` where it is; the others copy
  // it into `data` first and reduce there in place.
  void allreduce_into(const void* input, void* data, size_t count, int32_t dtype,
                      int32_t op) const;
  void flat_allreduce(const std::shared_ptr<gloo::Context>& context, void* data, size_t count,
                      size_t element_size, const ReduceFn& fn) const;

  // The two-level collectives' cross-host scratch: the direct allreduce's, at most a block's bytes
  // plus one element per host (uneven blocks), where the allreduce's step may take it ("direct";
  // under "auto" only at 2 hosts and below kAutoDirectBelowBytes), and the reduce_scatter ring's
  // incoming block (at most chunk_bytes / ranks). 0 for flat instances, which allocate per call.
  static size_t kept_exchange_bytes(const GlooComm& comm, const Config& config, bool two_level) {
    if (!two_level) return 0;
    const size_t hosts = static_cast<size_t>(comm.hosts());
    const size_t block =
        common::shm::two_level_block_bytes(config.chunk_bytes, comm.local_size()) +
        common::shm::kWidestElementBytes * hosts;
    size_t direct = 0;
    if (config.algorithm == Config::Algorithm::direct) {
      direct = block;
    } else if (config.algorithm == Config::Algorithm::automatic && hosts == 2) {
      direct = std::min<size_t>(block, Config::kAutoDirectBelowBytes);
    }
    const size_t ring_block =
        std::max<size_t>(config.chunk_bytes / (hosts * static_cast<size_t>(comm.local_size())),
                         common::shm::kWidestElementBytes);
    return std::max(direct, ring_block);
  }

  const GlooComm& comm_;
  common::shm::ShmGroup* shm_;
  common::shm::ShmGroup* host_shm_;
  sdk::Host host_;
  Config config_;
  sdk::Tracer tracer_;
  mutable Failure failure_;
  common::shm::HostGrid grid_;
  bool hierarchical_;
  FrameExchange agreement_;  // agreement_exchange() reads the members above
  // Kept from create() to destroy() (KeptScratch: no fresh pages per call): for the two-level
  // collectives' cross-host steps (kept_exchange_bytes), and for a round of the two-level
  // reduce_scatter and allgather.
  sdk::comm::KeptScratch exchange_scratch_;
  sdk::comm::KeptScratch round_scratch_;
};

// Points Gloo options at `data` as `count` elements of `element_size` bytes (Gloo takes the
// element size from the pointer's type).
template <class Options>
void set_output(Options& options, void* data, size_t count, size_t element_size) {
  switch (element_size) {
    case 1: return options.setOutput(static_cast<uint8_t*>(data), count);
    case 2: return options.setOutput(static_cast<uint16_t*>(data), count);
    case 4: return options.setOutput(static_cast<uint32_t*>(data), count);
    default: return options.setOutput(static_cast<uint64_t*>(data), count);
  }
}

}  // namespace strata::allreduce_gloo
