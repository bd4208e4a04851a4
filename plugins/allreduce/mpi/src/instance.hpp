// One plugin instance: what create() builds and destroy() tears down.
#pragma once

#include "collectives.hpp"
#include "config.hpp"
#include "cuda_aware.hpp"
#include "mpi_comm.hpp"
#include "mpi_process.hpp"
#include "progress_thread.hpp"
#include "shm_setup.hpp"

#include <strata/plugin.hpp>

#include <memory>

namespace strata::allreduce_mpi {

// The process's progress thread, drained so that the caller may use MPI; nullptr when MPI's thread
// support is below MPI_THREAD_SERIALIZED (non-blocking calls then use MPI_I* variants).
inline std::shared_ptr<ProgressThread> idle_progress_thread() {
  if (MpiProcess::thread_level() < MPI_THREAD_SERIALIZED) return nullptr;
  std::shared_ptr<ProgressThread> thread = ProgressThread::shared();
  thread->drain();
  return thread;
}

// caps.device_mask: host memory always, CUDA memory over a CUDA-aware MPI.
inline uint32_t device_mask(const CudaAwareness& cuda) {
  return STRATA_DEVICE_BIT(STRATA_DEVICE_HOST) |
         (cuda.aware ? STRATA_DEVICE_BIT(STRATA_DEVICE_CUDA) : 0u);
}

struct Instance {
  Instance(const strata_host_api* api, const Config& cfg)
      : host(api), config(cfg), progress(idle_progress_thread()),
        shm(set_up_shm(comm, config, host)), host_shm(set_up_host_shm(comm, config, host)),
        cuda(query_cuda_awareness()),
        collectives(comm, shm.group.get(), host_shm.group.get(), host, config, device_mask(cuda)) {}
  // A sub-group's instance (split()) around `split`, the communicator MPI_Comm_split made, which
  // it owns from here (the members before `comm` cannot fail while the parent keeps MPI up and
  // holds the progress thread). `cfg` is the parent's, never hierarchical. It holds its own
  // MpiProcess, so MPI stays initialised while it lives, and shares the process's progress
  // thread. Its shared-memory group, when its ranks are all on one host, is a segment of its own:
  // segment names carry the creating rank's pid and a per-process counter (plugins/common/shm's
  // ShmSegment::create, O_EXCL) and travel over the child's communicator, so sibling groups and
  // the parent cannot collide.
  Instance(const strata_host_api* api, const Config& cfg, MPI_Comm split)
      : host(api), config(cfg), progress(idle_progress_thread()),
        comm(MpiComm::Adopt{}, split), shm(set_up_shm(comm, config, host)),
        host_shm(set_up_host_shm(comm, config, host)), cuda(query_cuda_awareness()),
        collectives(comm, shm.group.get(), host_shm.group.get(), host, config, device_mask(cuda)) {}
  // Another instance may still hold the thread: finish our work before freeing the communicator.
  ~Instance() {
    if (progress) progress->drain();
  }
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  // Declaration order is construction order: MPI is up before the communicator is duplicated (with
  // the progress thread idle) and the communicator is freed before MPI may be finalised.
  sdk::Host host;
  Config config;
  MpiProcess process;
  std::shared_ptr<ProgressThread> progress;
  MpiComm comm{config};
  shm::Setup shm;  // set up with the communicator; its group is used by collectives
  shm::Setup host_shm;  // this host's ranks, for the two-level allreduce across hosts
  CudaAwareness cuda;  // after MPI_Init
  Collectives collectives;
  int live_requests = 0;  // handed out and not yet waited
};

}  // namespace strata::allreduce_mpi
