// Setting up the shared-memory group (plugins/common/shm) at create(), over a Gloo context (a
// SetupChannel): the world's when every rank runs on this host, or this host's ranks' for the
// two-level allreduce across hosts.
#pragma once

#include "config.hpp"
#include "gloo_comm.hpp"
#include <strata_common/shm_setup.hpp>

#include <strata/plugin.hpp>

namespace strata::allreduce_gloo {

// The shared-memory group is plugins/common/shm's.
namespace shm = common::shm;

// On create()'s thread, after the rendezvous. Throws sdk::Error (STRATA_ERR_COMM) only when Gloo
// fails; a segment that cannot be made or mapped turns the path off (a warning on the rank that saw
// why).
shm::Setup set_up_shm(const GlooComm& comm, const Config& config, const sdk::Host& host);

// The group of this host's ranks (over comm.local()) for the two-level allreduce across hosts,
// when hierarchical and comm.two_level() (with more than one rank here); otherwise none (and an
// empty summary).
shm::Setup set_up_host_shm(const GlooComm& comm, const Config& config, const sdk::Host& host);

}  // namespace strata::allreduce_gloo
