// One rank of the shared-memory kill test (run_shm_kill.sh): 3 ranks on one host loop over large
// allreduces through the shared-memory path of the comm plugin STRATA_SHM_KILL_PLUGIN
// (allreduce-mpi or allreduce-gloo); rank 1 SIGKILLs itself after 300 ms from a helper thread, so
// it dies in the middle of a collective. A survivor whose collective fails prints the plugin's
// message and exits 3 at once (MPI_Finalize could wait on the dead rank).
// Each rank prints "shm_kill: rank R pid P" first, so that the script can look for its segments.
#include <plugin_harness.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

using namespace strata;

int main() {
  test::PluginLibrary library(STRATA_SHM_KILL_PLUGIN);
  test::FakeHost host;
  host.api()->log = [](void*, int32_t, const char* message) {
    std::fprintf(stderr, "[plugin] %s\n", message);
  };
  const auto& ops = library.ops<strata_comm_ops>();
  strata_error err = sdk::make_error();
  void* self = nullptr;
  if (library.create<strata_comm_ops>("{}", host.api(), &self, &err) != STRATA_OK) {
    std::fprintf(stderr, "shm_kill: create: %s\n", err.message);
    return 2;
  }
  strata_comm_caps caps{};
  caps.struct_size = sizeof caps;
  if (ops.query(self, &caps, &err) != STRATA_OK) return 2;
  std::printf("shm_kill: rank %d pid %d\n", caps.rank, static_cast<int>(getpid()));
  std::fflush(stdout);

  if (caps.rank == 1) {
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      raise(SIGKILL);
    }).detach();
  }
  std::vector<float> data(uint64_t{8} << 20, 1.0f);  // 32 MiB: many rounds per collective
  strata_buffer buffer = sdk::host_buffer(data.data(), data.size(), STRATA_F32);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    strata_coll_args args = sdk::Comm::args(&buffer, &buffer);
    args.op = STRATA_AVG;
    if (ops.allreduce(self, &args, nullptr, &err) != STRATA_OK) {
      std::fprintf(stderr, "shm_kill: rank %d: allreduce failed: %s\n", caps.rank, err.message);
      std::fflush(stderr);
      _exit(3);
    }
  }
  std::fprintf(stderr, "shm_kill: rank %d: no error within 60 s\n", caps.rank);
  _exit(4);
}
