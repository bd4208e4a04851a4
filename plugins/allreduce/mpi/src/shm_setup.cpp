#include "shm_setup.hpp"

#include "mpi_process.hpp"
#include "validate.hpp"

#include <string>

namespace strata::allreduce_mpi {
namespace {

class MpiChannel final : public shm::SetupChannel {
 public:
  explicit MpiChannel(const MpiComm& comm) : comm_(comm) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void allgather(const void* mine, void* all, size_t bytes) const override {
    const int count = static_cast<int>(bytes);
    const int rc = MPI_Allgather(mine, count, MPI_BYTE, all, count, MPI_BYTE, comm_.handle());
    if (rc == MPI_SUCCESS) return;
    char text[512];
    sdk::fail(STRATA_ERR_COMM, std::string("MPI_Allgather failed (shared-memory set-up): ") +
                                   mpi_error_text(rc, text));
  }

 private:
  const MpiComm& comm_;
};

}  // namespace

shm::Setup set_up_shm(const MpiComm& comm, const Config& config, const sdk::Host& host) {
  const MpiChannel channel(comm);
  return shm::set_up(channel, config.shm, comm.local_size() == comm.size(), host, kPluginName);
}

}  // namespace strata::allreduce_mpi
