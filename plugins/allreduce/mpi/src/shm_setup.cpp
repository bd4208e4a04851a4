#include "shm_setup.hpp"

#include "mpi_channel.hpp"
#include "validate.hpp"

#include <string>

namespace strata::allreduce_mpi {
namespace {

constexpr const char* kSetUp = "shared-memory set-up";

}  // namespace

shm::Setup set_up_shm(const MpiComm& comm, const Config& config, const sdk::Host& host) {
  const MpiChannel channel(comm.handle(), kSetUp);
  return shm::set_up(channel, config.shm, comm.local_size() == comm.size(), host, kPluginName);
}

shm::Setup set_up_host_shm(const MpiComm& comm, const Config& config, const sdk::Host& host) {
  if (!comm.two_level()) return {nullptr, "", {}};
  const MpiChannel channel(comm.node(), kSetUp);
  shm::Setup setup = shm::set_up(channel, config.shm, true, host, kPluginName);
  shm::keep_only_if_everyone_has_one(setup, MpiChannel(comm.handle(), kSetUp));
  return setup;
}

}  // namespace strata::allreduce_mpi
