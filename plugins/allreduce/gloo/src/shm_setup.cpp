#include "shm_setup.hpp"

#include "errors.hpp"
#include "validate.hpp"

#include <gloo/allgather.h>

#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace strata::allreduce_gloo {
namespace {

class GlooChannel final : public shm::SetupChannel {
 public:
  GlooChannel(std::shared_ptr<gloo::Context> context, std::chrono::milliseconds timeout)
      : context_(std::move(context)), timeout_(timeout) {}
  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  void allgather(const void* mine, void* all, size_t bytes) const override {
    // Gloo's options take non-const pointers.
    std::vector<uint8_t> input(static_cast<const uint8_t*>(mine),
                               static_cast<const uint8_t*>(mine) + bytes);
    translate("gloo allgather (shared-memory set-up)", [&] {
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
};

// timeout_ms bounds every collective of this plugin, through shared memory too.
shm::Setup bounded(shm::Setup setup, const Config& config) {
  if (setup.group) setup.group->set_timeout(config.timeout.count());
  return setup;
}

}  // namespace

shm::Setup set_up_shm(const GlooComm& comm, const Config& config, const sdk::Host& host) {
  const GlooChannel channel(comm.world(), config.timeout);
  return bounded(shm::set_up(channel, config.shm, comm.hosts() == 1, host, kPluginName), config);
}

shm::Setup set_up_host_shm(const GlooComm& comm, const Config& config, const sdk::Host& host) {
  if (!comm.two_level() || !comm.cross()) return {nullptr, "", {}};
  shm::Setup setup{nullptr, "shm off (one rank)", {}};
  if (comm.local()) {
    const GlooChannel channel(comm.local(), config.timeout);
    setup = shm::set_up(channel, config.shm, true, host, kPluginName);
  }
  shm::keep_only_if_everyone_has_one(setup, GlooChannel(comm.world(), config.timeout));
  return bounded(std::move(setup), config);
}

}  // namespace strata::allreduce_gloo
