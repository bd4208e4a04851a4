#include "request.hpp"

#include <chrono>
#include <utility>

namespace strata::allreduce_mpi {

void Request::complete(const MpiComm& comm) {
  if (queued.valid()) queued.get();
  comm.wait_all(mpi);
  mpi.clear();
  if (finish) std::exchange(finish, nullptr)();
}

bool Request::mpi_done(const MpiComm& comm) {
  if (queued.valid()) return queued.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  return comm.test_all(mpi);
}

}  // namespace strata::allreduce_mpi
