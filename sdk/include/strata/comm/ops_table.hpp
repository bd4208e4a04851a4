// strata/comm/ops_table.hpp — a comm plugin's C boundary, written once: the strata_comm_ops table
// whose functions check their handles, unpack strata_coll_args and call the plugin inside
// sdk::guard, so that no exception crosses into the host. A plugin writes only what differs:
//
//   struct Boundary {
//     using Instance = ...;  // what create builds: has `sdk::Host host` and `int live_requests`
//     using Request = ...;   // a pending collective: has kMagic, `magic` and `const void* owner`
//     static constexpr const char* kName = "allreduce-x";  // for messages
//     // Builds the instance from the create arguments (parse the config, connect, log the
//     // create line). Throws sdk::Error to refuse.
//     static std::unique_ptr<Instance> create(const sdk::CreateArgs& args);
//     // Everything the instance offers (write_comm_caps copies what fits the caller's struct).
//     static strata_comm_caps caps(const Instance& inst);
//     // One collective, `prepare(collectives, request)` setting it up: run_now finishes it
//     // before returning (req == NULL); start leaves it running in `request`, which the table
//     // hands out until wait. `collectives` is the plugin's object with
//     // allreduce(const strata_coll_args&, Request&), the same for allgather, allgatherv,
//     // reduce_scatter and broadcast, and barrier(Request&).
//     template <class Prepare> static void run_now(Instance& inst, Prepare&& prepare);
//     template <class Prepare>
//     static void start(Instance& inst, Request& request, Prepare&& prepare);
//     static void wait(Instance& inst, Request& request);  // completes it; the table frees it
//     static bool test(Instance& inst, Request& request);  // done?
//     // Optional (ABI 1.10; the table's split is NULL without it): the sub-group instance of
//     // the ranks that passed the same color, or nullptr for STRATA_COMM_SPLIT_NONE (collective).
//     static std::unique_ptr<Instance> split(Instance& inst, const strata_comm_split_args& a);
//   };
//   With `static constexpr bool kAlltoallv = true;` (ABI 1.10) the table's alltoallv calls the
//   collectives' alltoallv(const strata_coll_args&, Request&) (which checks its arguments with
//   alltoallv_args); without it, alltoallv is NULL.
//   constexpr strata_comm_ops kOps = sdk::comm::OpsTable<Boundary>::ops();
#pragma once

#include <strata/comm/collective_args.hpp>
#include <strata/plugin.hpp>

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace strata::sdk::comm {

// caps.collective_mask of a plugin that has every collective of strata_comm_ops.
inline constexpr uint32_t kEveryCollective =
    STRATA_COLL_BIT(STRATA_COLL_ALLREDUCE) | STRATA_COLL_BIT(STRATA_COLL_ALLGATHER) |
    STRATA_COLL_BIT(STRATA_COLL_ALLGATHERV) | STRATA_COLL_BIT(STRATA_COLL_REDUCE_SCATTER) |
    STRATA_COLL_BIT(STRATA_COLL_BROADCAST) | STRATA_COLL_BIT(STRATA_COLL_BARRIER);
// caps.dtype_mask of a plugin that moves every strata_dtype.
inline constexpr uint32_t kEveryDtype = (1u << STRATA_DTYPE_COUNT) - 1u;

// The caps of a plugin with every collective and dtype and non-blocking calls, at this rank's
// place in the world, moving the memory in `device_mask` (STRATA_DEVICE_BIT of each type).
inline strata_comm_caps every_collective_caps(int32_t rank, int32_t size, int32_t local_rank,
                                              int32_t local_size, uint32_t device_mask) {
  strata_comm_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.rank = rank;
  caps.size = size;
  caps.local_rank = local_rank;
  caps.local_size = local_size;
  caps.dtype_mask = kEveryDtype;
  caps.collective_mask = kEveryCollective;
  caps.device_mask = device_mask;
  caps.nonblocking = 1;
  return caps;
}

// Whether a plugin's Boundary has split (ABI 1.10) and says kAlltoallv.
template <class Plugin, class = void>
struct HasSplit : std::false_type {};
template <class Plugin>
struct HasSplit<Plugin, std::void_t<decltype(Plugin::split(
                            std::declval<typename Plugin::Instance&>(),
                            std::declval<const strata_comm_split_args&>()))>> : std::true_type {};
template <class Plugin, class = void>
struct HasAlltoallv : std::false_type {};
template <class Plugin>
struct HasAlltoallv<Plugin, std::void_t<decltype(Plugin::kAlltoallv)>>
    : std::bool_constant<Plugin::kAlltoallv> {};

template <class Plugin>
class OpsTable {
  using Instance = typename Plugin::Instance;
  using Request = typename Plugin::Request;

 public:
  static constexpr strata_comm_ops ops() {
    // In the struct's order (the SDK is C++17: no designated initialisers).
    return strata_comm_ops{ops_header<strata_comm_ops>(),
                           create,
                           destroy,
                           query,
                           allreduce,
                           allgather,
                           allgatherv,
                           reduce_scatter,
                           broadcast,
                           barrier,
                           wait,
                           test,
                           HasAlltoallv<Plugin>::value ? alltoallv : nullptr,
                           HasSplit<Plugin>::value ? split : nullptr};
  }

 private:
  static Instance& instance(void* self) {
    if (self == nullptr) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "self is NULL; expected an instance from create()");
    }
    return *static_cast<Instance*>(self);
  }

  static Request& owned_request(Instance& inst, strata_request handle, const char* call) {
    auto* request = reinterpret_cast<Request*>(handle);
    if (request == nullptr) invalid_argument(call, "req is NULL");
    if (request->magic != Request::kMagic || request->owner != &inst) {
      invalid_argument(call, "req is not a pending request of this instance");
    }
    return *request;
  }

  // With req == NULL the collective is finished on return; otherwise its Request moves to the
  // heap and is handed out until wait().
  template <class Prepare>
  static strata_status collective(void* self, strata_request* req, strata_error* err,
                                  Prepare&& prepare) {
    if (req != nullptr) *req = nullptr;
    return guard(err, [&] {
      Instance& inst = instance(self);
      if (req == nullptr) {
        Plugin::run_now(inst, std::forward<Prepare>(prepare));
        return;
      }
      auto request = std::make_unique<Request>();
      request->owner = &inst;
      Plugin::start(inst, *request, std::forward<Prepare>(prepare));
      *req = reinterpret_cast<strata_request>(request.release());
      ++inst.live_requests;
    });
  }

  static strata_status create(const strata_plugin_create_args* args, void** self,
                              strata_error* err) {
    return guard(err, [&] {
      if (self == nullptr) {
        invalid_argument("create", "self is NULL; expected where to store the instance");
      }
      *self = nullptr;
      *self = Plugin::create(read_create_args(args)).release();
    });
  }

  static void destroy(void* self) {
    auto* inst = static_cast<Instance*>(self);
    if (inst == nullptr) return;
    if (inst->live_requests > 0) {
      inst->host.log(STRATA_LOG_WARN, "%s: destroyed with %d request(s) never waited",
                     Plugin::kName, inst->live_requests);
    }
    delete inst;
  }

  static strata_status query(void* self, strata_comm_caps* caps, strata_error* err) {
    return guard(err, [&] { write_comm_caps(caps, Plugin::caps(instance(self))); });
  }

  static strata_status allreduce(void* self, const strata_coll_args* args, strata_request* req,
                                 strata_error* err) {
    return collective(self, req, err, [&](auto& c, Request& r) {
      c.allreduce(coll_args(args, "allreduce"), r);
    });
  }

  static strata_status allgather(void* self, const strata_coll_args* args, strata_request* req,
                                 strata_error* err) {
    return collective(self, req, err, [&](auto& c, Request& r) {
      c.allgather(coll_args(args, "allgather"), r);
    });
  }

  static strata_status allgatherv(void* self, const strata_coll_args* args, strata_request* req,
                                  strata_error* err) {
    return collective(self, req, err, [&](auto& c, Request& r) {
      c.allgatherv(coll_args(args, "allgatherv"), r);
    });
  }

  static strata_status reduce_scatter(void* self, const strata_coll_args* args,
                                      strata_request* req, strata_error* err) {
    return collective(self, req, err, [&](auto& c, Request& r) {
      c.reduce_scatter(coll_args(args, "reduce_scatter"), r);
    });
  }

  static strata_status broadcast(void* self, const strata_coll_args* args, strata_request* req,
                                 strata_error* err) {
    return collective(self, req, err, [&](auto& c, Request& r) {
      c.broadcast(coll_args(args, "broadcast"), r);
    });
  }

  static strata_status barrier(void* self, const strata_coll_args* args, strata_request* req,
                               strata_error* err) {
    return collective(self, req, err, [&](auto& c, Request& r) {
      coll_args(args, "barrier");
      c.barrier(r);
    });
  }

  static strata_status alltoallv(void* self, const strata_coll_args* args, strata_request* req,
                                 strata_error* err) {
    if constexpr (HasAlltoallv<Plugin>::value) {
      return collective(self, req, err, [&](auto& c, Request& r) {
        if (args == nullptr) invalid_argument("alltoallv", "args is NULL");
        c.alltoallv(*args, r);
      });
    } else {
      return guard(err, [] { fail(STRATA_ERR_UNSUPPORTED, "alltoallv: not supported"); });
    }
  }

  static strata_status split(void* self, const strata_comm_split_args* args, void** child,
                             strata_error* err) {
    return guard(err, [&] {
      if (child == nullptr) invalid_argument("split", "child is NULL; expected where to store it");
      *child = nullptr;
      Instance& inst = instance(self);
      if constexpr (HasSplit<Plugin>::value) {
        if (inst.live_requests > 0) {
          invalid_argument("split", std::to_string(inst.live_requests) +
                                        " request(s) of this instance are pending; wait them first");
        }
        *child = Plugin::split(inst, split_args(args)).release();
      } else {
        fail(STRATA_ERR_UNSUPPORTED, "split: not supported");
      }
    });
  }

  static strata_status wait(void* self, strata_request req, strata_error* err) {
    return guard(err, [&] {
      Instance& inst = instance(self);
      std::unique_ptr<Request> request(&owned_request(inst, req, "wait"));
      --inst.live_requests;
      Plugin::wait(inst, *request);
    });
  }

  static strata_status test(void* self, strata_request req, int32_t* done, strata_error* err) {
    return guard(err, [&] {
      Instance& inst = instance(self);
      Request& request = owned_request(inst, req, "test");
      if (done == nullptr) invalid_argument("test", "done is NULL");
      *done = Plugin::test(inst, request) ? 1 : 0;
    });
  }
};

}  // namespace strata::sdk::comm
