// One rank of the comm_shm_isa tests: creates the MPI plugin (whose shared-memory path chooses
// its kernels from STRATA_CPU_ISA, or the deprecated STRATA_COMM_ISA), prints the plugin's log
// lines, checks one allreduce, and ends. The tests match the log for the choice and its warning.
#include <plugin_harness.hpp>

#include <cstdio>
#include <vector>

using namespace strata;

int main() {
  test::PluginLibrary library(STRATA_ALLREDUCE_MPI_PLUGIN);
  test::FakeHost host;
  host.api()->log = [](void*, int32_t, const char* message) {
    std::printf("[plugin] %s\n", message);
  };
  const auto& ops = library.ops<strata_comm_ops>();
  strata_error err = sdk::make_error();
  void* self = nullptr;
  if (library.create<strata_comm_ops>("{}", host.api(), &self, &err) != STRATA_OK) {
    std::printf("shm_isa_log: create failed: %s\n", err.message);
    return 2;
  }
  strata_comm_caps caps{};
  caps.struct_size = sizeof caps;
  if (ops.query(self, &caps, &err) != STRATA_OK) return 2;
  std::vector<float> data(4096, 1.0f);
  strata_buffer buffer = sdk::host_buffer(data.data(), data.size(), STRATA_F32);
  strata_coll_args args = sdk::Comm::args(&buffer, &buffer);
  if (ops.allreduce(self, &args, nullptr, &err) != STRATA_OK) {
    std::printf("shm_isa_log: allreduce failed: %s\n", err.message);
    return 3;
  }
  const bool right = data.front() == static_cast<float>(caps.size) &&
                     data.back() == static_cast<float>(caps.size);
  std::printf("shm_isa_log: rank %d allreduce %s\n", caps.rank, right ? "correct" : "WRONG");
  ops.destroy(self);
  return right ? 0 : 4;
}
