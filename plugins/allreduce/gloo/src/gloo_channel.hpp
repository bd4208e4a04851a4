// A Gloo context as plugins/common/shm's SetupChannel: the allgather that create()'s one-off
// exchanges use (the shared-memory set-up, the check that every rank has the same config).
#pragma once

#include "errors.hpp"

#include <strata_common/shm_setup.hpp>

#include <gloo/allgather.h>
#include <gloo/context.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace strata::allreduce_gloo {

class GlooChannel final : public common::shm::SetupChannel {
 public:
  // `purpose` names the exchange in a transport error: "gloo allgather (<purpose>): ...".
  GlooChannel(std::shared_ptr<gloo::Context> context, std::chrono::milliseconds timeout,
              std::string purpose)
      : context_(std::move(context)), timeout_(timeout), purpose_(std::move(purpose)) {}
  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  void allgather(const void* mine, void* all, size_t bytes) const override {
    // Gloo's options take non-const pointers.
    std::vector<uint8_t> input(static_cast<const uint8_t*>(mine),
                               static_cast<const uint8_t*>(mine) + bytes);
    translate("gloo allgather (" + purpose_ + ")", [&] {
      gloo::AllgatherOptions options(context_);
      options.setInput(input.data(), bytes);
      options.setOutput(static_cast<uint8_t*>(all), bytes * static_cast<size_t>(size()));
      options.setTimeout(timeout_);
      gloo::allgather(options);
    });
  }

 private:
  std::shared_ptr<gloo::Context> context_;
  std::chrono::milliseconds timeout_;
  std::string purpose_;
};

}  // namespace strata::allreduce_gloo
