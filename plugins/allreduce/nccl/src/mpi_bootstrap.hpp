// The unique id through MPI (jobs started by mpirun): MPI is initialised if nobody did, rank 0's
// id goes to every rank with MPI_Bcast, and MPI is finalised with the last instance that
// initialised it (as the allreduce-mpi plugin does: Open MPI's mpirun fails a job whose process
// exits without MPI_Finalize).
#pragma once

#include <nccl.h>

namespace strata::allreduce_nccl {

class MpiSession {
 public:
  MpiSession();  // throws sdk::Error (STRATA_ERR_COMM) if MPI cannot be brought up
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank 0's `id` into every rank's `id`.
  void broadcast(ncclUniqueId& id) const;

 private:
  bool owned_ = false;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace strata::allreduce_nccl
