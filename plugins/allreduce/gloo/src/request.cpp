#include "request.hpp"

#include <utility>

namespace strata::allreduce_gloo {

Scratch::Scratch(const sdk::Host& host, size_t bytes)
    : host_(host), data_(host.alloc(bytes, STRATA_MEM_COMM_BUFFERS)) {}

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

void Request::complete() {
  if (queued.valid()) queued.get();
  if (finish) std::exchange(finish, nullptr)();
}

}  // namespace strata::allreduce_gloo
