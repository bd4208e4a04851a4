// The plugin's C boundary: its descriptor and strata_comm_ops table, the SDK's common boundary
// (strata/comm/ops_table.hpp) over what this plugin does differently.
#include "errors.hpp"
#include "instance.hpp"
#include "sigpipe.hpp"

#include <strata/comm/ops_table.hpp>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace strata::allreduce_gloo {
namespace {

// The create line's word on the hierarchy in effect: ", hierarchical" when asked for,
// ", hierarchical (auto)" when "auto" turned it on, nothing when flat.
const char* hierarchy(const Config& config, const Collectives& collectives) {
  if (!collectives.hierarchical()) return "";
  return config.hierarchical == Config::Hierarchy::automatic ? ", hierarchical (auto)"
                                                             : ", hierarchical";
}

// What this plugin's table does beyond the common boundary (strata/comm/ops_table.hpp). Work
// runs after what is queued (collective order): a non-blocking collective's on the instance's
// progress thread, a blocking one's on the caller's thread once the progress thread is idle. The
// ABI allows one thread at a time per instance, so a context or the shared-memory group is never
// used by two threads at once, and a blocking call costs no hand-off to another thread and back
// (two wake-ups, tens of microseconds on a loaded host).
struct Boundary {
  using Instance = allreduce_gloo::Instance;
  using Request = allreduce_gloo::Request;
  static constexpr const char* kName = "allreduce-gloo";
  // ABI 1.10: the table's alltoallv calls Collectives::alltoallv (data_movement.cpp).
  static constexpr bool kAlltoallv = true;

  static std::unique_ptr<Instance> create(const sdk::CreateArgs& args) {
    // Counts creates in this process; every rank creates its instances in the same order, so the
    // number keys this instance's rendezvous apart from the others sharing the store. Counted
    // before the config is read: a rank whose config is refused must not shift its later numbers.
    static int instances = 0;
    const int number = instances++;
    const Config config = parse_config(args.config_json);
    // Gloo's device thread and the store's threads inherit this mask: SIGPIPE blocked.
    const SigpipeBlocked no_sigpipe;
    auto inst = translate("gloo: create", [&] {
      return std::make_unique<Instance>(args.host, config, number);
    });
    const GlooComm& comm = inst->comm;
    const std::string where = config.file_store ? "file " + config.store_path
                                                : "tcp " + comm.env().bind_ip;
    std::string levels;
    if (inst->collectives.hierarchical() && comm.hosts() > 1) {
      levels = inst->host_shm.group
                   ? "; two-level allreduce: within hosts " + inst->host_shm.summary +
                         ", across hosts by every local rank, in " +
                         std::to_string(config.chunk_bytes) +
                         "-byte pieces; agreement in two levels (within hosts through shared "
                         "memory, then across hosts)"
                   : "; hierarchical allreduce through each host's first rank" +
                         std::string(comm.two_level() ? " (within hosts " +
                                                            inst->host_shm.summary + ")"
                                                      : " (the hosts hold different numbers of "
                                                        "ranks)");
    }
    inst->host.log(STRATA_LOG_INFO,
                   "gloo on (%d rank%s, %d host%s, %s, %s, %s%s); rank %d, local %d of %d; %s%s",
                   comm.size(), comm.size() == 1 ? "" : "s", comm.hosts(),
                   comm.hosts() == 1 ? "" : "s", where.c_str(), config.algorithm_name(),
                   config.agreement_name(inst->collectives.agreement_parties()),
                   hierarchy(config, inst->collectives), comm.rank(), comm.local_rank(),
                   comm.local_size(), inst->shm.summary.c_str(), levels.c_str());
    return inst;
  }

  static strata_comm_caps caps(const Instance& inst) {
    const GlooComm& c = inst.comm;
    strata_comm_caps caps = sdk::comm::every_collective_caps(
        c.rank(), c.size(), c.local_rank(), c.local_size(), STRATA_DEVICE_BIT(STRATA_DEVICE_HOST));
    caps.collective_mask |= STRATA_COLL_BIT(STRATA_COLL_ALLTOALLV);
    caps.features |= STRATA_COMM_FEATURE_SPLIT;
    return caps;
  }

  // ABI 1.10. One agreement frame over the parent's world context carries every rank's color and
  // key (a rank calling anything else fails alike with STRATA_ERR_MISMATCH); each color's members,
  // ordered by (key, parent rank), then build their child (instance.hpp, gloo_comm.hpp). Every
  // rank counts the split, so the child's store keys ("<parent prefix>/split<n>/<color>") are
  // unique however often the parent (or a child) is split.
  static std::unique_ptr<Instance> split(Instance& inst, const strata_comm_split_args& a) {
    GlooComm& comm = inst.comm;
    const int number = comm.next_split();
    const auto n = static_cast<size_t>(comm.size());
    inst.progress.drain();
    const SigpipeBlocked no_sigpipe;
    const int32_t mine[2] = {a.color, a.key};
    std::vector<int32_t> all(mine, mine + 2);
    if (n > 1) {
      const CallHeader header{kSplitKind, -1, -1, -1, 0, 0};
      std::vector<Frame> frames;
      inst.collectives.latched_exchange("split", [&] {
        frames = translate("gloo split", [&] {
          return inst.collectives.agree(header, mine, sizeof mine);
        });
      });
      all.resize(2 * n);
      for (size_t r = 0; r < n; ++r) std::memcpy(&all[2 * r], frames[r].payload, sizeof mine);
    }
    std::vector<int32_t> colors;
    for (size_t r = 0; r < n; ++r) {
      if (all[2 * r] != STRATA_COMM_SPLIT_NONE &&
          std::find(colors.begin(), colors.end(), all[2 * r]) == colors.end()) {
        colors.push_back(all[2 * r]);
      }
    }
    const int groups = static_cast<int>(colors.size());
    if (a.color == STRATA_COMM_SPLIT_NONE) {
      inst.host.log(STRATA_LOG_INFO,
                    "gloo split %d of %d rank%s: %d group%s; rank %d in none (SPLIT_NONE)", number,
                    comm.size(), n == 1 ? "" : "s", groups, groups == 1 ? "" : "s", comm.rank());
      return nullptr;
    }
    SplitPlan plan;
    plan.number = number;
    plan.color = a.color;
    for (size_t r = 0; r < n; ++r) {
      if (all[2 * r] == a.color) plan.members.push_back(static_cast<int>(r));
    }
    std::stable_sort(plan.members.begin(), plan.members.end(), [&](int x, int y) {
      return all[2 * static_cast<size_t>(x) + 1] < all[2 * static_cast<size_t>(y) + 1];
    });
    plan.rank = static_cast<int>(
        std::find(plan.members.begin(), plan.members.end(), comm.rank()) - plan.members.begin());
    auto child = translate("gloo: split", [&] { return std::make_unique<Instance>(inst, plan); });
    const GlooComm& c = child->comm;
    inst.host.log(STRATA_LOG_INFO,
                  "gloo split %d of %d rank%s: %d group%s; rank %d -> color %d, rank %d of %d, "
                  "%d host%s, local %d of %d; %s",
                  number, comm.size(), n == 1 ? "" : "s", groups, groups == 1 ? "" : "s",
                  comm.rank(), a.color, c.rank(), c.size(), c.hosts(), c.hosts() == 1 ? "" : "s",
                  c.local_rank(), c.local_size(), child->shm.summary.c_str());
    return child;
  }

  // On this thread, after the queued work. Over Gloo, SIGPIPE is blocked meanwhile, as on the
  // plugin's own threads (sigpipe.hpp): Gloo may write to a peer that has just died. Through shared
  // memory no socket is written, and the four system calls that costs are a good part of a small
  // collective's time.
  template <class Prepare>
  static void run_now(Instance& inst, Prepare&& prepare) {
    Request request;
    prepare(inst.collectives, request);
    inst.progress.drain();
    if (request.via_shm) {
      request.work();
    } else {
      const SigpipeBlocked no_sigpipe;
      request.work();
    }
    request.complete();
  }

  template <class Prepare>
  static void start(Instance& inst, Request& request, Prepare&& prepare) {
    prepare(inst.collectives, request);
    request.queued = inst.progress.submit(std::move(request.work));
  }

  static void wait(Instance&, Request& request) { request.complete(); }
  static bool test(Instance&, Request& request) { return request.done(); }
};

constexpr strata_comm_ops kOps = sdk::comm::OpsTable<Boundary>::ops();

}  // namespace
}  // namespace strata::allreduce_gloo

STRATA_PLUGIN(strata::allreduce_gloo::kOps, "allreduce-gloo", "0.1.0",
              "collectives over Gloo's TCP transport for host buffers, with an authenticated "
              "rendezvous store; no MPI")
