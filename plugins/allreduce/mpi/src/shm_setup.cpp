#include "shm_setup.hpp"

#include "mpi_process.hpp"
#include <strata_common/shm_isa.hpp>
#include <strata_common/shm_kernels.hpp>

#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

namespace strata::allreduce_mpi {
namespace {

// What local rank 0 tells the others about the segment it made.
struct Offer {
  int32_t ok;
  char name[116];
  uint64_t nonce;
};

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[512];
  sdk::fail(STRATA_ERR_COMM, std::string(what) + " failed (shared-memory set-up): " +
                                 mpi_error_text(rc, text));
}

// The pid namespace: pids a rank writes into the segment mean the same to its peers only if
// they share it (containers sharing /dev/shm and IPC but not pids would not).
uint64_t pid_namespace() {
  struct stat st {};
  return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

uint64_t random_nonce() {
  std::random_device device;
  return (uint64_t{device()} << 32) ^ device();
}

// Staging buffers: the configured size, a whole number of pages, and room for one cache line per
// rank (reduce_scatter stages one piece per rank's block).
size_t slot_bytes(const Config& config, int ranks) {
  const size_t floor = std::max<size_t>(4096, size_t{64} * static_cast<size_t>(ranks));
  const size_t wanted = std::max<size_t>(config.shm_chunk_bytes, floor);
  return (wanted + 4095) / 4096 * 4096;
}

// Whether the ranks together may run on at least as many CPUs as there are ranks (the union of
// their affinity masks): then a waiting rank may spin a moment without taking the core of the
// rank it waits for. mpirun binds each of a few ranks to one core, so one rank's own mask says
// nothing about the group.
bool cores_for_everyone(const MpiComm& comm) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) return false;
  cpu_set_t all;
  CPU_ZERO(&all);
  check(MPI_Allreduce(&mine, &all, sizeof(cpu_set_t), MPI_BYTE, MPI_BOR, comm.handle()),
        "MPI_Allreduce");
  return CPU_COUNT(&all) >= comm.size();
}

ShmSetup off(std::string why) { return {nullptr, "shm off (" + why + ")", {}}; }

}  // namespace

ShmSetup set_up_shm(const MpiComm& comm, const Config& config, const sdk::Host& host) {
  if (!config.shm) return off("comm.config");
  if (comm.size() == 1) return off("one rank");
  if (comm.local_size() != comm.size()) {
    return off("the ranks span several hosts; MPI only");
  }
  const int rank = comm.rank();
  const int size = comm.size();
  const size_t slot = slot_bytes(config, size);
  const size_t bytes = shm::ShmGroup::segment_bytes(size, slot);
  // The instruction set is chosen per instance; an unusable STRATA_CPU_ISA is an error (create
  // fails) rather than a silent fallback.
  const common::cpu::IsaChoice isa = common::cpu::choose_isa(shm::kLegacyIsaVariable);
  if (!isa.deprecation.empty()) {
    host.log(STRATA_LOG_WARN, "allreduce-mpi: %s", isa.deprecation.c_str());
  }
  const shm::Kernels& kernels = shm::kernels_for(isa.isa);

  std::string error;
  Offer offer{};
  std::unique_ptr<shm::ShmGroup> group;
  if (rank == 0) {
    try {
      shm::remove_stale_segments();
      shm::ShmSegment segment = shm::ShmSegment::create(bytes);
      offer.nonce = random_nonce();
      shm::ShmGroup::initialise(segment, size, slot, offer.nonce);
      std::snprintf(offer.name, sizeof offer.name, "%s", segment.name().c_str());
      group = std::make_unique<shm::ShmGroup>(std::move(segment), 0, size, slot, offer.nonce,
                                              kernels);
      offer.ok = 1;
    } catch (const sdk::Error& e) {
      error = e.what();
    }
  }
  check(MPI_Bcast(&offer, sizeof offer, MPI_BYTE, 0, comm.handle()), "MPI_Bcast");
  if (rank != 0 && offer.ok) {
    try {
      group = std::make_unique<shm::ShmGroup>(shm::ShmSegment::open(offer.name, bytes), rank,
                                              size, slot, offer.nonce, kernels);
    } catch (const sdk::Error& e) {
      error = e.what();
    }
  }
  int all_mapped = group ? 1 : 0;
  check(MPI_Allreduce(MPI_IN_PLACE, &all_mapped, 1, MPI_INT, MPI_MIN, comm.handle()),
        "MPI_Allreduce");
  if (!error.empty()) host.log(STRATA_LOG_WARN, "allreduce-mpi: %s", error.c_str());
  if (!all_mapped) {
    return off("a rank could not set up the shared-memory segment; see its warning");
  }
  // Every rank has mapped the segment: the name can go, and nothing is left in /dev/shm however
  // the job ends.
  if (rank == 0) group->segment().unlink();

  uint64_t mine = pid_namespace();
  uint64_t lowest = mine, highest = mine;
  check(MPI_Allreduce(&mine, &lowest, 1, MPI_UINT64_T, MPI_MIN, comm.handle()), "MPI_Allreduce");
  check(MPI_Allreduce(&mine, &highest, 1, MPI_UINT64_T, MPI_MAX, comm.handle()), "MPI_Allreduce");
  const bool watch_peers = mine != 0 && lowest == highest;
  group->start(watch_peers, cores_for_everyone(comm));
  std::string summary = "shm on (" + std::to_string(size) + " ranks, " + std::to_string(slot) +
                        "-byte chunks, " + std::to_string(bytes >> 10) + " KiB segment, " +
                        isa.describe() + " kernels, waits " +
                        (group->spins() ? "spin then sleep" : "sleep (more ranks than cores)") +
                        (watch_peers ? "" : ", peers' exits not watched (pid namespaces differ)") +
                        ")";
  return {std::move(group), std::move(summary),
          AccountedBytes(host, static_cast<int64_t>(bytes / static_cast<size_t>(size)))};
}

}  // namespace strata::allreduce_mpi
