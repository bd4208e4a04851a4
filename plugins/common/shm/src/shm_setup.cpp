#include <strata_common/shm_isa.hpp>
#include <strata_common/shm_kernels.hpp>
#include <strata_common/shm_setup.hpp>

#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

namespace strata::common::shm {
namespace {

// Shared memory from the first byte, in rounds of 1 MiB per rank. Measured with bench/allreduce
// through allreduce-mpi (f32 SUM, 2 and 4 ranks, 16 KiB - 4 MiB rounds): 1 MiB rounds were best or
// tied at every size (fewer rounds, fewer waits; 4 MiB rounds fall out of cache and lost
// everywhere), and below 64 KiB the shared-memory path beat the plugin's MPI path at 30 of 32
// points, so no size goes to the transport by default. Figures: plugins/allreduce/mpi/README.md.
constexpr uint64_t kDefaultMinBytes = 0;
constexpr uint64_t kDefaultChunkBytes = uint64_t{1} << 20;

// What rank 0 tells the others about the segment it made.
struct Offer {
  int32_t ok;
  char name[116];
  uint64_t nonce;
};

// What every rank tells the others once it has tried to map the segment.
struct Joined {
  int32_t mapped;
  uint64_t pid_namespace;
  cpu_set_t affinity;
};

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
size_t slot_bytes(const Settings& settings, int ranks) {
  const size_t floor = std::max<size_t>(4096, size_t{64} * static_cast<size_t>(ranks));
  const size_t wanted = std::max<size_t>(settings.chunk_bytes, floor);
  return (wanted + 4095) / 4096 * 4096;
}

Setup off(const std::string& why) { return {nullptr, "shm off (" + why + ")", {}}; }

template <class T>
std::vector<T> gather(const SetupChannel& channel, const T& mine) {
  std::vector<T> all(static_cast<size_t>(channel.size()));
  channel.allgather(&mine, all.data(), sizeof(T));
  return all;
}

}  // namespace

Settings read_settings(config::ObjectReader& reader) {
  Settings s;
  s.enabled = reader.boolean("shm", true);
  s.min_bytes = reader.unsigned_integer("shm_min_bytes", kDefaultMinBytes, 0, UINT64_MAX,
                                        "a non-negative integer");
  s.chunk_bytes = reader.unsigned_integer("shm_chunk_bytes", kDefaultChunkBytes, 1, UINT64_MAX,
                                          "a positive integer");
  return s;
}

std::string summary(const Settings& settings) {
  return std::string("shm ") + (settings.enabled ? "true" : "false") + ", shm_min_bytes " +
         std::to_string(settings.min_bytes) + ", shm_chunk_bytes " +
         std::to_string(settings.chunk_bytes);
}

Setup set_up(const SetupChannel& channel, const Settings& settings, bool one_host,
             const sdk::Host& host, const char* plugin) {
  if (!settings.enabled) return off("comm.config");
  if (channel.size() == 1) return off("one rank");
  if (!one_host) return off("the ranks span several hosts");
  const int rank = channel.rank();
  const int size = channel.size();
  const size_t slot = slot_bytes(settings, size);
  const size_t bytes = ShmGroup::segment_bytes(size, slot);
  // The instruction set is chosen per instance; an unusable STRATA_CPU_ISA is an error (create
  // fails) rather than a silent fallback.
  const cpu::IsaChoice isa = cpu::choose_isa(kLegacyIsaVariable);
  if (!isa.deprecation.empty()) {
    host.log(STRATA_LOG_WARN, "%s: %s", plugin, isa.deprecation.c_str());
  }
  const Kernels& kernels = kernels_for(isa.isa);

  std::string error;
  Offer offer{};
  std::unique_ptr<ShmGroup> group;
  if (rank == 0) {
    try {
      remove_stale_segments();
      ShmSegment segment = ShmSegment::create(bytes);
      offer.nonce = random_nonce();
      ShmGroup::initialise(segment, size, slot, offer.nonce);
      std::snprintf(offer.name, sizeof offer.name, "%s", segment.name().c_str());
      group = std::make_unique<ShmGroup>(std::move(segment), 0, size, slot, offer.nonce, kernels);
      offer.ok = 1;
    } catch (const sdk::Error& e) {
      error = e.what();
    }
  }
  offer = gather(channel, offer)[0];
  if (rank != 0 && offer.ok) {
    try {
      group = std::make_unique<ShmGroup>(ShmSegment::open(offer.name, bytes), rank, size, slot,
                                         offer.nonce, kernels);
    } catch (const sdk::Error& e) {
      error = e.what();
    }
  }
  Joined mine{};
  mine.mapped = group ? 1 : 0;
  mine.pid_namespace = pid_namespace();
  CPU_ZERO(&mine.affinity);
  if (sched_getaffinity(0, sizeof mine.affinity, &mine.affinity) != 0) CPU_ZERO(&mine.affinity);
  const std::vector<Joined> joined = gather(channel, mine);
  if (!error.empty()) host.log(STRATA_LOG_WARN, "%s: %s", plugin, error.c_str());
  bool all_mapped = true;
  bool one_pid_namespace = mine.pid_namespace != 0;
  // The union of the ranks' affinity masks: with at least a CPU per rank, a waiting rank may spin
  // a moment without taking the core of the rank it waits for. A launcher may bind each of a few
  // ranks to one core, so one rank's own mask says nothing about the group.
  cpu_set_t all_cpus;
  CPU_ZERO(&all_cpus);
  for (const Joined& j : joined) {
    all_mapped = all_mapped && j.mapped != 0;
    one_pid_namespace = one_pid_namespace && j.pid_namespace == mine.pid_namespace;
    CPU_OR(&all_cpus, &all_cpus, &j.affinity);
  }
  if (!all_mapped) return off("a rank could not set up the shared-memory segment; see its warning");
  // Every rank has mapped the segment: the name can go, and nothing is left in /dev/shm however
  // the job ends.
  if (rank == 0) group->segment().unlink();

  group->start(one_pid_namespace, CPU_COUNT(&all_cpus) >= size);
  std::string summary = "shm on (" + std::to_string(size) + " ranks, " + std::to_string(slot) +
                        "-byte chunks, " + std::to_string(bytes >> 10) + " KiB segment, " +
                        isa.describe() + " kernels, waits " +
                        (group->spins() ? "spin then sleep" : "sleep (more ranks than cores)") +
                        (one_pid_namespace ? ""
                                           : ", peers' exits not watched (pid namespaces differ)") +
                        ")";
  return {std::move(group), std::move(summary),
          AccountedBytes(host, static_cast<int64_t>(bytes / static_cast<size_t>(size)))};
}

void keep_only_if_everyone_has_one(Setup& setup, const SetupChannel& job) {
  const int32_t mine = setup.group ? 1 : 0;
  for (int32_t theirs : gather(job, mine)) {
    if (theirs != 0) continue;
    setup = {nullptr,
             setup.group ? "shm off (a rank on another host has no group; see its create line)"
                         : setup.summary,
             {}};
    return;
  }
}

}  // namespace strata::common::shm
