// The plugin's config object (the manifest's `comm.config`), validated.
#pragma once

#include <strata_common/shm_setup.hpp>

#include <chrono>
#include <string>

namespace strata::allreduce_gloo {

struct Config {
  // Bounds the rendezvous (every rank must arrive within it) and every collective (a peer that
  // stops answering fails the call instead of hanging it).
  std::chrono::milliseconds timeout{30000};
  bool bcube = false;         // algorithm "bcube" instead of "ring" for flat allreduces
  bool hierarchical = false;  // allreduce: within hosts, then across hosts, then within hosts
  bool file_store = false;    // store "file": Gloo's FileStore in store_path (a shared directory)
  std::string store_path;
  // When every rank runs on one host, collectives of at least shm.min_bytes (the caller's payload)
  // go through shared memory (plugins/common/shm) instead of Gloo's TCP pairs: the same keys,
  // defaults and behaviour as allreduce-mpi's. shm.enabled false: Gloo only.
  common::shm::Settings shm;
};

// Parses and validates `config_json` (NULL or "" mean {}). Throws sdk::Error with
// STRATA_ERR_INVALID_ARGUMENT naming the offending key.
Config parse_config(const char* config_json);

}  // namespace strata::allreduce_gloo
