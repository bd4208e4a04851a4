// The plugin's C boundary: its descriptor and strata_comm_ops table, the SDK's common boundary
// (strata/comm/ops_table.hpp) over what this plugin does differently.
#include "errors.hpp"
#include "instance.hpp"
#include "sigpipe.hpp"

#include <strata/comm/ops_table.hpp>

#include <memory>
#include <string>
#include <utility>

namespace strata::allreduce_gloo {
namespace {

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

  static std::unique_ptr<Instance> create(const sdk::CreateArgs& args) {
    const Config config = parse_config(args.config_json);
    // Counts creates in this process; every rank creates its instances in the same order, so the
    // number keys this instance's rendezvous apart from the others sharing the store.
    static int instances = 0;
    const int number = instances++;
    // Gloo's device thread and the store's threads inherit this mask: SIGPIPE blocked.
    const SigpipeBlocked no_sigpipe;
    auto inst = translate("gloo: create", [&] {
      return std::make_unique<Instance>(args.host, config, number);
    });
    const GlooComm& comm = inst->comm;
    const std::string where = config.file_store ? "file " + config.store_path
                                                : "tcp " + comm.env().bind_ip;
    std::string levels;
    if (config.hierarchical && comm.hosts() > 1) {
      levels = inst->host_shm.group
                   ? "; two-level allreduce: within hosts " + inst->host_shm.summary +
                         ", across hosts by every local rank"
                   : "; hierarchical allreduce through each host's first rank" +
                         std::string(comm.two_level() ? " (within hosts " +
                                                            inst->host_shm.summary + ")"
                                                      : " (the hosts hold different numbers of "
                                                        "ranks)");
    }
    inst->host.log(STRATA_LOG_INFO,
                   "gloo on (%d rank%s, %d host%s, %s, %s%s); rank %d, local %d of %d; %s%s",
                   comm.size(), comm.size() == 1 ? "" : "s", comm.hosts(),
                   comm.hosts() == 1 ? "" : "s", where.c_str(), config.algorithm_name(),
                   config.hierarchical ? ", hierarchical" : "", comm.rank(), comm.local_rank(),
                   comm.local_size(), inst->shm.summary.c_str(), levels.c_str());
    return inst;
  }

  static strata_comm_caps caps(const Instance& inst) {
    const GlooComm& c = inst.comm;
    return sdk::comm::every_collective_caps(c.rank(), c.size(), c.local_rank(), c.local_size(),
                                            STRATA_DEVICE_BIT(STRATA_DEVICE_HOST));
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
