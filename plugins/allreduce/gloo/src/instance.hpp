// One plugin instance: what create() builds and destroy() tears down.
#pragma once

#include "collectives.hpp"
#include "config.hpp"
#include "env.hpp"
#include "gloo_comm.hpp"
#include "progress_thread.hpp"
#include "shm_setup.hpp"

#include <strata/plugin.hpp>

namespace strata::allreduce_gloo {

struct Instance {
  Instance(const strata_host_api* api, const Config& cfg, int instance_number)
      : host(api), config(cfg), env(read_env()), comm(env, config, host, instance_number),
        shm(set_up_shm(comm, config, host)), host_shm(set_up_host_shm(comm, config, host)),
        collectives(comm, shm.group.get(), host_shm.group.get(), host, config) {}
  // A split's child (ABI 1.10; entry.cpp): the members' own context (gloo_comm.hpp), the parent's
  // config but never hierarchical, and a shared-memory group of its own when its members share
  // this host (plugins/common/shm names every segment by its creator's pid and a count and hands
  // the name over the child's context, so groups never meet). Collective over the members.
  Instance(const Instance& parent, const SplitPlan& plan)
      : host(parent.host), config(child_config(parent.config)), env(child_env(parent.env, plan)),
        comm(parent.comm, env, config, plan), shm(set_up_shm(comm, config, host)),
        host_shm(set_up_host_shm(comm, config, host)),
        collectives(comm, shm.group.get(), host_shm.group.get(), host, config) {}
  // Queued work refers to the contexts: finish it before they go.
  ~Instance() { progress.drain(); }
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  // Declaration order is construction order; the progress thread is joined before the contexts
  // (and rank 0's store server) are torn down.
  sdk::Host host;
  Config config;
  Env env;
  GlooComm comm;
  shm::Setup shm;  // set up over the world context; its group is used by collectives
  shm::Setup host_shm;  // this host's ranks, for the two-level allreduce across hosts
  Collectives collectives;
  ProgressThread progress;
  int live_requests = 0;  // handed out and not yet waited

 private:
  static Config child_config(Config config) {
    config.hierarchical = Config::Hierarchy::off;
    return config;
  }
  static Env child_env(Env env, const SplitPlan& plan) {
    env.rank = plan.rank;
    env.size = static_cast<int>(plan.members.size());
    return env;
  }
};

}  // namespace strata::allreduce_gloo
