// The collectives of strata_comm_ops on host buffers (and CUDA buffers over a CUDA-aware MPI),
// over one MpiComm.
//
// Each call validates its arguments and prepares the request: it records the MPI calls in
// request.mpi_work (run later by the caller) and what remains to finish it in request.finish.
// Collectives must outlive the requests it prepares (mpi_work refers to it and to the MpiComm).
//
// With config.arrival_gate, mpi_work run blocking (pending == nullptr: on the caller's thread or
// the progress thread) first passes MpiComm::arrival_gate, once per collective (not per piece):
// ranks whose peers are late sleep there instead of spinning in Open MPI's blocking collective.
// Started as MPI_I* variants it needs no gate: those return at once and wait_all does not spin.
//
// When every rank runs on one host and shared memory could be set up (shm_setup.hpp), collectives
// whose payload is at least config.shm.min_bytes run over shared memory instead (shm_group.hpp):
// their work is then a call into the ShmGroup, run where MPI work would run (caller or progress
// thread) and recorded as "shm_<collective>" spans. It needs no arrival gate: its waits sleep.
// Every rank takes the same path for the same call when the ranks agree on its arguments: the
// choice depends only on the payload size. The group checks agreement between the ranks that
// took it; ranks whose sizes straddle a non-zero shm_min_bytes take different paths and hang
// (the runtime's stall inspector ends them). With the default 0 every collective goes through
// the group, so every disagreement is caught.
//
// When the job records a timeline, mpi_work run blocking is one "mpi_<collective>" span on the
// thread that runs it (the progress thread, or the caller's for a blocking collective), gate and
// pieces included; bytes = the caller's payload (allreduce: its buffer; reduce_scatter: the send
// buffer; allgather(v): the receive buffer; alltoallv: the elements this rank receives). MPI_I*
// starts return at once and record nothing.
#pragma once

#include "config.hpp"
#include "mpi_comm.hpp"
#include "request.hpp"
#include <strata_common/shm_group.hpp>
#include <strata_common/shm_two_level.hpp>
#include "validate.hpp"

#include <strata/comm/scratch.hpp>
#include <strata/plugin.hpp>

#include <functional>
#include <utility>
#include <vector>

namespace strata::allreduce_mpi {

// The shared-memory group is plugins/common/shm's.
namespace shm = common::shm;

class Collectives {
 public:
  // `shm`: the shared-memory group, or nullptr for MPI only. `host_shm`: the group of this host's
  // ranks for the two-level collectives across hosts, or nullptr. All must outlive this.
  // `device_mask`: the memory this plugin moves (caps.device_mask); buffers elsewhere are refused.
  Collectives(const MpiComm& comm, shm::ShmGroup* shm, shm::ShmGroup* host_shm,
              const sdk::Host& host, const Config& config, uint32_t device_mask)
      : comm_(comm), shm_(shm), host_shm_(host_shm), host_(host), config_(config), tracer_(host),
        device_mask_(device_mask),
        grid_{comm.hosts(), comm.local_size(), comm.host_grid()},
        round_scratch_(host, host_shm != nullptr
                                 ? shm::two_level_round_bytes(config.chunk_bytes, grid_)
                                 : 0) {}

  void allreduce(const strata_buffer* send, const strata_buffer* recv, int32_t op,
                 Request& request) const;
  void reduce_scatter(const strata_buffer* send, const strata_buffer* recv, int32_t op,
                      Request& request) const;
  void allgather(const strata_buffer* send, const strata_buffer* recv, Request& request) const;
  void allgatherv(const strata_buffer* send, const strata_buffer* recv, const uint64_t* recv_counts,
                  const uint64_t* displs, Request& request) const;
  void broadcast(const strata_buffer* buffer, int32_t root, Request& request) const;
  void barrier(Request& request) const;
  // Always over MPI (MPI_Alltoallv, or MPI_Ialltoallv where MPI_I* variants are used), also when
  // the shared-memory group is active: the group has no alltoallv. Reads ABI 1.10's fields.
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

 private:
  // Where a reduction's MPI call reads and writes (MPI_IN_PLACE or the send buffer; the result
  // buffer), widening halves into request.scratch.
  struct ReductionBuffers {
    const void* input;
    void* result;
  };
  ReductionBuffers reduction_buffers(const char* call, const Buffer& send, const Buffer& recv,
                                     Request& request) const;

  // `work` moving `bytes`, preceded by the arrival gate when it runs blocking and the gate is on.
  // Below config_.arrival_gate_min_bytes a blocking run starts the MPI_I* variants and waits for
  // them politely instead (MpiComm::wait_all): the waiters still sleep when a peer is late, and a
  // small collective costs one exchange instead of a barrier and then the collective.
  using MpiWork = std::function<void(MpiComm::Pending)>;
  MpiWork gated(uint64_t bytes, MpiWork work) const {
    if (!config_.arrival_gate) return work;
    if (bytes < config_.arrival_gate_min_bytes) {
      return [&comm = comm_, work = std::move(work)](MpiComm::Pending pending) {
        if (pending != nullptr) return work(pending);
        std::vector<MPI_Request> requests;
        work(&requests);
        comm.wait_all(requests);
      };
    }
    return [&comm = comm_, work = std::move(work)](MpiComm::Pending pending) {
      if (pending == nullptr) comm.arrival_gate();
      work(pending);
    };
  }

  // `work` as a timeline span `name` (a string literal) when it runs blocking; `work` itself when
  // no timeline is recorded, so that costs nothing then.
  MpiWork traced(const char* name, uint64_t bytes, MpiWork work) const {
    if (!tracer_.enabled()) return work;
    return [tracer = tracer_, name, bytes, work = std::move(work)](MpiComm::Pending pending) {
      const int64_t begin = pending == nullptr ? tracer.now() : 0;
      work(pending);
      if (pending == nullptr) tracer.span(name, begin, -1, bytes);
    };
  }

  // Whether a collective moving `payload_bytes` of `buffer` (checked) goes through shared memory:
  // never for device memory, which the shared-memory loops cannot read; CUDA-aware MPI moves it.
  bool use_shm(uint64_t payload_bytes, const strata_buffer* buffer) const {
    return shm_ != nullptr && config_.shm.takes(payload_bytes) &&
           (buffer == nullptr || buffer->device.type == STRATA_DEVICE_HOST);
  }
  // Whether blocking calls on `send` and `recv` may run in two levels across hosts: there is a host
  // group and both buffers are host memory (the packing copies and shared-memory loops cannot
  // read device memory). Ranks agree on where their buffers live, as for use_shm.
  bool two_level_on(const strata_buffer* send, const strata_buffer* recv) const {
    const auto on_host = [](const strata_buffer* b) {
      return b == nullptr || b->device.type == STRATA_DEVICE_HOST;
    };
    return host_shm_ != nullptr && on_host(send) && on_host(recv);
  }
  // Device buffers go to MPI as they are: what the plugin would do to them on the host (widening
  // halves to f32, AVG's division) is refused, naming the call.
  void check_device_reduction(const char* call, const strata_buffer* send, int32_t op) const;
  // `work` on the shared-memory group, as the request's work (traced as `name`).
  template <class Work>
  MpiWork on_shm(const char* name, uint64_t bytes, Work work) const {
    return traced(name, bytes, [group = shm_, work](MpiComm::Pending) { work(*group); });
  }

  // Issues an allreduce of `count` elements of `dtype` (an accumulation dtype; `op` a strata op)
  // as pieces of at most config_.chunk_bytes: each two-level when it runs blocking and
  // `two_level` (two_level_on), else through MpiComm.
  void chunked_allreduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op,
                         bool two_level, MpiComm::Pending pending) const;
  // reduce_scatter (`count` elements per rank; `send` may be `recv`, in place) and allgather in
  // two levels through host_shm_, in rounds of config_.chunk_bytes of the whole message.
  void two_level_reduce_scatter(const void* send, void* recv, uint64_t count, int32_t dtype,
                                int32_t op) const;
  void two_level_allgather(const void* send, void* recv, uint64_t count, int32_t dtype) const;

  const MpiComm& comm_;
  shm::ShmGroup* shm_;
  shm::ShmGroup* host_shm_;
  sdk::Host host_;
  Config config_;
  sdk::Tracer tracer_;
  uint32_t device_mask_;
  shm::HostGrid grid_;
  // A round of the two-level reduce_scatter and allgather, kept from create() to destroy()
  // (KeptScratch: no fresh pages per call).
  sdk::comm::KeptScratch round_scratch_;
};

}  // namespace strata::allreduce_mpi
