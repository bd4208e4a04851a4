#include "request.hpp"

#include <utility>

namespace strata::allreduce_gloo {

void Request::complete() {
  if (queued.valid()) queued.get();
  if (finish) std::exchange(finish, nullptr)();
}

}  // namespace strata::allreduce_gloo
