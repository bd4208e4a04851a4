#include "shm_setup.hpp"

#include "mpi_process.hpp"
#include "validate.hpp"

#include <string>

namespace strata::allreduce_mpi {
namespace {

class MpiChannel final : public shm::SetupChannel {
 public:
  explicit MpiChannel(MPI_Comm comm) : comm_(comm) {
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
    sdk::fail(STRATA_ERR_COMM, std::string("MPI_Allgather failed (shared-memory set-up): ") +
                                   mpi_error_text(rc, text));
  }

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace

shm::Setup set_up_shm(const MpiComm& comm, const Config& config, const sdk::Host& host) {
  const MpiChannel channel(comm.handle());
  return shm::set_up(channel, config.shm, comm.local_size() == comm.size(), host, kPluginName);
}

shm::Setup set_up_host_shm(const MpiComm& comm, const Config& config, const sdk::Host& host) {
  if (!comm.two_level()) return {nullptr, "", {}};
  const MpiChannel channel(comm.node());
  shm::Setup setup = shm::set_up(channel, config.shm, true, host, kPluginName);
  shm::keep_only_if_everyone_has_one(setup, MpiChannel(comm.handle()));
  return setup;
}

}  // namespace strata::allreduce_mpi
