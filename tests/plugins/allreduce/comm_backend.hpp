// What differs between the comm plugins that the shared conformance tests (comm_env.cpp and the
// *_test.cpp files) run against: the library, the configs of the four instances the environment
// creates, and where the launcher puts the rank. One definition per test executable:
// comm_backend_mpi.cpp (allreduce-mpi under mpirun) or comm_backend_gloo.cpp (allreduce-gloo under
// strata-run).
#pragma once

namespace strata::test::comm {

struct Backend {
  const char* plugin_path;
  // Configs of instance(), chunked_instance(), shm_instance() and mpi_instance() (comm_env.hpp
  // says what each is for in each backend).
  const char* default_config;
  const char* chunked_config;
  const char* shm_config;
  const char* mpi_config;
  const char* rank_variable;  // the environment variable that holds this process's rank
  bool has_shm;               // whether the plugin has a shared-memory path (logs "shm on (")
  const char* create_line;    // what the line create() logs, with the "shm on/off" summary, holds
};

const Backend& backend();

}  // namespace strata::test::comm
