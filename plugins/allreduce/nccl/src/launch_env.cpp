#include "launch_env.hpp"

#include <strata/plugin.hpp>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace strata::allreduce_nccl {
namespace {

const char* get(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

// A decimal in [low, high), or fails naming the variable.
int number(const char* name, int low, int high, const char* what) {
  const char* text = get(name);
  if (text == nullptr) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT, std::string("allreduce-nccl: ") + name +
                                               " is not set; expected " + what +
                                               " (mpirun and strata-run set it)");
  }
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value < low || value >= high) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              std::string("allreduce-nccl: ") + name + "='" + text + "': expected " + what);
  }
  return static_cast<int>(value);
}

// One launcher's variable names.
struct Names {
  const char* size;
  const char* rank;
  const char* local_rank;
  const char* local_size;
};

LaunchEnv read(const Names& n) {
  LaunchEnv env;
  env.size = number(n.size, 1, 1 << 20, "a positive number of ranks");
  const std::string ranks = "a rank in [0, " + std::to_string(env.size) + ")";
  env.rank = number(n.rank, 0, env.size, ranks.c_str());
  env.local_size = number(n.local_size, 1, env.size + 1, "the number of ranks on this host");
  const std::string locals = "a local rank in [0, " + std::to_string(env.local_size) + ")";
  env.local_rank = number(n.local_rank, 0, env.local_size, locals.c_str());
  return env;
}

}  // namespace

LaunchEnv read_launch_env() {
  if (get("OMPI_COMM_WORLD_SIZE") != nullptr) {
    LaunchEnv env = read({"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                          "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"});
    env.from_mpirun = true;
    return env;
  }
  if (get("WORLD_SIZE") != nullptr) {
    LaunchEnv env = read({"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_SIZE"});
    env.from_strata_run = true;
    return env;
  }
  return LaunchEnv{};
}

}  // namespace strata::allreduce_nccl
