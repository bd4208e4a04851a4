#include "shm_setup.hpp"

#include "errors.hpp"
#include "validate.hpp"

#include <gloo/allgather.h>

#include <cstring>
#include <vector>

namespace strata::allreduce_gloo {
namespace {

class GlooChannel final : public shm::SetupChannel {
 public:
  GlooChannel(const GlooComm& comm, std::chrono::milliseconds timeout)
      : comm_(comm), timeout_(timeout) {}
  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  void allgather(const void* mine, void* all, size_t bytes) const override {
    // Gloo's options take non-const pointers.
    std::vector<uint8_t> input(static_cast<const uint8_t*>(mine),
                               static_cast<const uint8_t*>(mine) + bytes);
    translate("gloo allgather (shared-memory set-up)", [&] {
      gloo::AllgatherOptions options(comm_.world());
      options.setInput(input.data(), bytes);
      options.setOutput(static_cast<uint8_t*>(all), bytes * static_cast<size_t>(size()));
      options.setTimeout(timeout_);
      gloo::allgather(options);
    });
  }

 private:
  const GlooComm& comm_;
  std::chrono::milliseconds timeout_;
};

}  // namespace

shm::Setup set_up_shm(const GlooComm& comm, const Config& config, const sdk::Host& host) {
  const GlooChannel channel(comm, config.timeout);
  return shm::set_up(channel, config.shm, comm.hosts() == 1, host, kPluginName);
}

}  // namespace strata::allreduce_gloo
