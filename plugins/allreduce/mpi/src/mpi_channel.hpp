// An MPI communicator as plugins/common/shm's SetupChannel: the allgather that create()'s one-off
// exchanges use (the shared-memory set-up, the check that every rank has the same config).
#pragma once

#include "mpi_process.hpp"

#include <strata/plugin.hpp>
#include <strata_common/shm_setup.hpp>

#include <mpi.h>

#include <string>
#include <utility>

namespace strata::allreduce_mpi {

class MpiChannel final : public common::shm::SetupChannel {
 public:
  // `purpose` names the exchange in an MPI error: "MPI_Allgather failed (<purpose>): ...".
  MpiChannel(MPI_Comm comm, std::string purpose) : comm_(comm), purpose_(std::move(purpose)) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void allgather(const void* mine, void* all, size_t bytes) const override {
    const int count = static_cast<int>(bytes);
    const int rc = MPI_Allgather(mine, count, MPI_BYTE, all, count, MPI_BYTE, comm_);
    if (rc == MPI_SUCCESS) return;
    char text[512];
    sdk::fail(STRATA_ERR_COMM, "MPI_Allgather failed (" + purpose_ + "): " +
                                   mpi_error_text(rc, text));
  }

 private:
  MPI_Comm comm_;
  std::string purpose_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace strata::allreduce_mpi
