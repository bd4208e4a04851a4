#include "request.hpp"

#include <chrono>
#include <utility>

namespace strata::allreduce_mpi {

Scratch::Scratch(const sdk::Host& host, size_t count)
    : host_(host),
      data_(static_cast<float*>(host.alloc(count * sizeof(float), STRATA_MEM_COMM_BUFFERS))) {}

Scratch::Scratch(Scratch&& other) noexcept
    : host_(other.host_), data_(std::exchange(other.data_, nullptr)) {}

Scratch& Scratch::operator=(Scratch&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) host_.free(data_);
    host_ = other.host_;
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}

Scratch::~Scratch() {
  if (data_ != nullptr) host_.free(data_);
}

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
