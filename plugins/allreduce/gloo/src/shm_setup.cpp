#include "shm_setup.hpp"

#include "gloo_channel.hpp"
#include "validate.hpp"

#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace strata::allreduce_gloo {
namespace {

constexpr const char* kSetUp = "shared-memory set-up";

// timeout_ms bounds every collective of this plugin, through shared memory too.
shm::Setup bounded(shm::Setup setup, const Config& config) {
  if (setup.group) setup.group->set_timeout(config.timeout.count());
  return setup;
}

}  // namespace

shm::Setup set_up_shm(const GlooComm& comm, const Config& config, const sdk::Host& host) {
  const GlooChannel channel(comm.world(), config.timeout, kSetUp);
  return bounded(shm::set_up(channel, config.shm, comm.hosts() == 1, host, kPluginName), config);
}

shm::Setup set_up_host_shm(const GlooComm& comm, const Config& config, const sdk::Host& host) {
  if (!comm.two_level() || !comm.cross()) return {nullptr, "", {}};
  shm::Setup setup{nullptr, "shm off (one rank)", {}};
  if (comm.local()) {
    const GlooChannel channel(comm.local(), config.timeout, kSetUp);
    setup = shm::set_up(channel, config.shm, true, host, kPluginName);
  }
  shm::keep_only_if_everyone_has_one(setup, GlooChannel(comm.world(), config.timeout, kSetUp));
  return bounded(std::move(setup), config);
}

}  // namespace strata::allreduce_gloo
