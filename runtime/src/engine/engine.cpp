#include "engine/engine.hpp"
#include "engine/engine_calls.hpp"

#include "device/device_placement.hpp"
#include "error.hpp"
#include "log.hpp"
#include "manifest/manifest_agreement.hpp"
#include "loader/plugin_loader.hpp"
#include "loader/runtime_abi.hpp"

#include <strata/comm/reduce_ops.hpp>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <exception>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

namespace strata::rt {
namespace {

strata_grad_ready_args grad_ready_args(uint32_t index, bool boundary) {
  strata_grad_ready_args a{};
  a.struct_size = sizeof(a);
  a.param_index = index;
  a.boundary = boundary ? 1 : 0;
  return a;
}

strata_group_args group_args(uint32_t group, uint32_t flags) {
  strata_group_args a{};
  a.struct_size = sizeof(a);
  a.group = group;
  a.flags = flags;
  return a;
}

// STRATA_FIRST_WORLD_SIZE: strata-run sets it on every rank of a job it restarted at another
// size (the size of the job's first run), so the batch keeps that run's global batch.
uint64_t first_world_size_from_env() {
  const char* text = std::getenv("STRATA_FIRST_WORLD_SIZE");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || errno != 0 || value == 0 || text[0] == '-') {
    throw Error(STRATA_ERR_INVALID_ARGUMENT, std::string("STRATA_FIRST_WORLD_SIZE: expected a positive integer, got '") +
                                                 text + "'");
  }
  return value;
}

PluginIdentity identity_of(const std::string& stratum, const LoadedPlugin& plugin) {
  const strata_plugin_descriptor& d = plugin.descriptor();
  return {stratum, d.name != nullptr ? d.name : "?", d.version != nullptr ? d.version : "?",
          plugin.sha256()};
}

}  // namespace

Engine::Engine(const strata_create_options& options) : manifest_(load_manifest(options)) {
  activity_.enter_call(ApiCall::Create);
  // Plugins ask at create whether to trace; the timeline itself opens once the comm stratum is up.
  host_services_.set_timeline_wanted(!manifest_.timeline_path.empty());
  LoadedPlugin comm_library = load_plugin(manifest_.comm, STRATA_PLUGIN_COMM, manifest_);
  std::vector<PluginIdentity> plugins{identity_of("comm", comm_library)};
  const strata_host_api* comm_host = host_services_.make_table("comm", nullptr, nullptr, nullptr, nullptr);
  comm_.create(std::move(comm_library), manifest_.comm, manifest_.source, comm_host);
  comm_caps_ = new_caps<strata_comm_caps>();
  comm_.call("query", &strata_comm_ops::query, &comm_caps_);
  // A bit whose function is NULL is ignored (plugin_api.h): cleared before anyone reads the caps.
  comm_caps_.collective_mask = offered_collectives(comm_.ops(), comm_caps_.collective_mask);
  if (comm_.ops().split == nullptr) comm_caps_.features &= ~STRATA_COMM_FEATURE_SPLIT;
  if (comm_caps_.nonblocking != 0 && comm_.ops().wait == nullptr) {
    throw Error(STRATA_ERR_ABI, manifest_.source + ": " + manifest_.comm.json_path + ": " +
                                    comm_.label() + " (" + comm_.library().path().string() +
                                    "): its caps say nonblocking, but its ops table has no 'wait' "
                                    "(required when nonblocking)");
  }
  const strata_comm_caps& caps = comm_caps_;
  world_ = {sizeof(strata_world_info), caps.rank, caps.size, caps.local_rank, caps.local_size};
  set_log_rank(world_.rank);
  tracked_comm_ = std::make_unique<TrackedComm>(comm_.ops(), comm_.self(), activity_, step_time_,
                                                timeline_slot_);
  collectives_ = std::make_unique<Collectives>(*tracked_comm_->ops(), tracked_comm_->self(),
                                               comm_.label(), world_.size);
  if (caps.device_mask == STRATA_DEVICE_BIT(STRATA_DEVICE_CUDA)) {
    // allreduce-nccl: the runtime's own values and the host's metrics are in host memory.
    collectives_->stage_host_buffers([this] { return host_services_.stream(); }, world_.rank);
  }
  if (world_.size > 1) start_watchdog();
  if (!manifest_.timeline_path.empty()) open_timeline();

  // Each phase ends on every rank alike, so no rank is left in a collective the others skipped.
  LoadedPlugin precision, sharding, offload;
  run_agreed("loading plugins", [&] {
    precision = load_plugin(manifest_.precision, STRATA_PLUGIN_PRECISION, manifest_);
    sharding = load_plugin(manifest_.sharding, STRATA_PLUGIN_SHARDING, manifest_);
    offload = load_plugin(manifest_.offload, STRATA_PLUGIN_OFFLOAD, manifest_);
    plugins.push_back(identity_of("precision", precision));
    plugins.push_back(identity_of("sharding", sharding));
    plugins.push_back(identity_of("offload", offload));
  });
  agree_across_ranks(*collectives_, manifest_.source, agreement_entries(manifest_.json, plugins));
  run_agreed("start-up", [&] {
    batch_ = resolve_batch(manifest_, world_.size, first_world_size_from_env());
    create_training_strata(std::move(precision), std::move(sharding), std::move(offload));
    check_capabilities();
    create_schedule();
  });
  if (world_.rank == 0) {
    logger().info(
        "plugins: comm={} sharding={} precision={} offload={} optimizer={} stage={} "
        "world_size={} train_batch_size={} micro_batch={} gradient_accumulation_steps={}",
        comm_.name(), sharding_.name(), precision_.name(), offload_.name(),
        offload_caps_.optimizer != nullptr ? offload_caps_.optimizer : "?", sharding_caps_.stage,
        world_.size, batch_.train_batch_size, batch_.micro_batch_size,
        batch_.gradient_accumulation_steps);
  }
  activity_.leave_call();
}

Engine::~Engine() {
  if (getpid() != creator_pid_) {
    // A forked child (a data-loader worker) destroying its copy: the plugins, the comm transport
    // and the watchdog thread belong to the parent; the child's copies are left alone (its host
    // groups' instances too: the proxies that own them are abandoned with tracked_comm_).
    if (tracked_comm_) tracked_comm_->abandon();
    comm_.abandon();
    precision_.abandon();
    sharding_.abandon();
    offload_.abandon();
    (void)watchdog_.release();
    (void)control_.release();
    (void)timeline_.release();  // its writer thread, and its part file, are the parent's
    if (pending_save_) {        // so is a save's writer thread: the child has no such thread
      (void)pending_save_->writer.release();
    }
    return;
  }
  activity_.enter_call(ApiCall::Destroy);
  if (watchdog_) watchdog_->closing();
  if (std::uncaught_exceptions() > 0 && !failure_ && watchdog_) {
    // A C++ host unwinding from an error of its own (its Runtime going out of scope): the others
    // are mid-run and wait for this rank; tell them, and do not wait for them in the teardown.
    failure_ = Error(STRATA_ERR_INTERNAL, "its host destroyed the runtime while unwinding an "
                                          "exception (the host's own error) at step " +
                                              std::to_string(global_steps_));
    watchdog_->local_failure(failure_->what());
  }
  end_saves();
  if (timeline_) finish_timeline();
  if (failure_ && watchdog_ && !watchdog_->others_done_within(1.0)) {
    // This rank failed alone: the others are ending (the watchdog told them why), and a
    // collective teardown, or a plugin's wait on requests still in flight, would wait for them
    // forever and keep this rank's host from reporting its error. When every rank failed alike,
    // they tear down together as usual.
    logger().info("the comm stratum is closed without its teardown after this rank's failure");
    tracked_comm_->abandon();
    comm_.abandon();
  }
  // The comm stratum's teardown (MPI_Finalize) waits for the other ranks: count it as waiting, so
  // a rank that never arrives is reported like any other stall. The members go after this body.
  activity_.begin_wait();
}

// The watchdog watches from here on, the start-up exchanges included; the control channel that
// brings it news of the other ranks joins it once every rank has connected.
void Engine::start_watchdog() {
  WatchdogSettings settings;
  settings.warning_seconds = manifest_.stall_warning_seconds;
  settings.shutdown_seconds = manifest_.stall_shutdown_seconds;
  watchdog_ = std::make_unique<Watchdog>(activity_, world_.rank, world_.size, settings, timeline_slot_);
  run_agreed("control channel", [&] {
    control_ = std::make_unique<ControlChannel>(*collectives_, world_.rank, world_.size,
                                                world_.local_size == world_.size, 60.0);
  });
  watchdog_->attach(*control_);
}

void Engine::open_timeline() {
  // Every rank starts its clock at the same moment, so that the ranks' tracks line up.
  collectives_->barrier();
  const int64_t origin = Timeline::now_ns();
  run_agreed("opening the timeline", [&] {
    timeline_ = std::make_unique<Timeline>(manifest_.timeline_path, manifest_.timeline_origin,
                                           world_.rank, origin, activity_);
  });
  timeline_slot_.store(timeline_.get(), std::memory_order_release);
}

void Engine::finish_timeline() {
  if (!failure_) {
    try {
      timeline_->finish_merged(*collectives_);
      if (world_.rank == 0) logger().info("timeline: wrote {}", timeline_->path());
    } catch (const std::exception& e) {
      logger().error("timeline: {}", e.what());
    }
  } else {
    const std::string kept = timeline_->finish_alone(failure_->what());
    if (!kept.empty()) logger().info("timeline: this rank's events, up to its failure, are in {}", kept);
  }
  // Anything traced from here on is dropped; the timeline itself goes after the plugins.
  timeline_slot_.store(nullptr, std::memory_order_release);
}

void Engine::create_training_strata(LoadedPlugin precision, LoadedPlugin sharding,
                                    LoadedPlugin offload) {
  const strata_comm_ops* comm = tracked_comm_->ops();
  void* comm_self = tracked_comm_->self();
  // Precision first: sharding publishes through its casts. Each table names the plugin's peers.
  precision_.create(std::move(precision), manifest_.precision, manifest_.source,
                    host_services_.make_table("precision", comm, comm_self, nullptr, nullptr));
  const strata_host_api* peers = host_services_.make_table(
      "sharding", comm, comm_self, &precision_.ops(), precision_.self());
  sharding_.create(std::move(sharding), manifest_.sharding, manifest_.source, peers);
  offload_.create(std::move(offload), manifest_.offload, manifest_.source,
                  host_services_.make_table("offload", comm, comm_self, &precision_.ops(),
                                            precision_.self()));
  // ABI 1.8: sharding reaches the offload stratum's parameter store from finalize on.
  host_services_.lend_offload(peers, &offload_.ops(), offload_.self());
  precision_caps_ = new_caps<strata_precision_caps>();
  precision_.call("query", &strata_precision_ops::query, &precision_caps_);
  sharding_caps_ = new_caps<strata_sharding_caps>();
  sharding_.call("query", &strata_sharding_ops::query, &sharding_caps_);
  offload_caps_ = new_caps<strata_offload_caps>();
  if (offload_.ops().header.built_minor < 6) {  // an older plugin leaves the 1.6 fields unwritten
    offload_caps_.lr = offload_caps_.momentum = std::numeric_limits<double>::quiet_NaN();
  }
  offload_.call("query", &strata_offload_ops::query, &offload_caps_);
  const bool offload_writes = STRATA_STRUCT_HAS(&offload_caps_, strata_offload_caps, writes_model_copy) &&
                              offload_caps_.writes_model_copy != 0;
  model_copies_.configure(&precision_, offload_writes, offload_.name());
}

// An impossible combination fails here, at load time, with a sentence naming both sides.
void Engine::check_capabilities() const {
  const strata_comm_caps& caps = comm_caps_;
  const std::string comm_side = manifest_.source + ": /comm: plugin '" + comm_.name() + "'";
  // Names every missing one of `wanted` at once.
  auto need = [&](std::initializer_list<strata_collective> wanted, const std::string& who) {
    std::string missing;
    for (strata_collective c : wanted) {
      if ((caps.collective_mask & STRATA_COLL_BIT(c)) == 0) {
        missing += (missing.empty() ? "" : " and ") + std::string(sdk::comm::collective_name(c));
      }
    }
    if (!missing.empty()) {
      throw Error(STRATA_ERR_UNSUPPORTED, comm_side + " does not offer " + missing + ", which " +
                                              who + " needs");
    }
  };
  // The runtime's own collectives (allgather_strings pads rather than use allgatherv).
  need({STRATA_COLL_ALLREDUCE, STRATA_COLL_ALLGATHER, STRATA_COLL_BROADCAST}, "the runtime");
  if (sharding_caps_.stage >= 1) {
    // The ABI's optional collectives: ZeRO stages 1-3 partition with them.
    need({STRATA_COLL_REDUCE_SCATTER, STRATA_COLL_ALLGATHERV},
         "sharding plugin '" + std::string(sharding_.name()) + "' at stage " +
             std::to_string(sharding_caps_.stage));
  }
  for (int32_t dtype : {precision_caps_.model_dtype, int32_t{STRATA_F32}, int32_t{STRATA_F64},
                        int32_t{STRATA_I64}, int32_t{STRATA_U8}}) {
    if ((caps.dtype_mask & STRATA_DTYPE_BIT(dtype)) == 0) {
      throw Error(STRATA_ERR_UNSUPPORTED, comm_side + " cannot reduce " +
                                              strata_dtype_name(dtype) + ", which precision plugin '" +
                                              precision_.name() + "' and the runtime use");
    }
  }
}

strata_training_info Engine::training() const {
  strata_training_info info{};
  info.struct_size = sizeof(info);
  info.train_batch_size = batch_.train_batch_size;
  info.micro_batch_size = batch_.micro_batch_size;
  info.gradient_accumulation_steps = batch_.gradient_accumulation_steps;
  info.gradient_clipping = manifest_.gradient_clipping;
  info.model_dtype = precision_caps_.model_dtype;
  return info;
}

uint32_t Engine::register_param(const strata_param_desc& desc) {
  if (finalized_) throw Error(STRATA_ERR_INVALID_ARGUMENT, "register_param: called after finalize");
  return registry_.add(desc);
}

void Engine::finalize() {
  if (finalized_) throw Error(STRATA_ERR_INVALID_ARGUMENT, "finalize: called twice");
  guarded(ApiCall::Finalize, -1, [&] {
    registry_.verify_same_on_all_ranks(*collectives_);
    // Where the parameters are, and whether every stratum can work there, before their memory is
    // read or written (a device pointer must never be dereferenced on the host).
    run_agreed("finalize", [&] { place_parameters(); });
    // Deferred values (NULL data, API 1.9) are written after finalize through FOR_WRITE gathers.
    for (const ParamRecord& p : registry_.params()) {
      if (p.data != nullptr) collectives_->broadcast(p.data, p.count, p.dtype, 0, p.device);
    }
    run_agreed("finalize", [&] { setup_after_registration(); });
    finalized_ = true;
    if (watchdog_) {
      ActivityNames names;
      for (const ParamRecord& p : registry_.params()) names.params.push_back(p.name);
      for (const GroupRecord& g : registry_.groups()) names.groups.push_back(g.name);
      watchdog_->set_names(std::move(names));
    }
    logger().info("memory: {}", ledger_.summary());
  });
  auto_resume();  // after finalize_ is set: load() requires it
}

void Engine::place_parameters() {
  if (registry_.params().empty()) return;  // setup_after_registration says so
  std::vector<PlacedParam> placed;
  for (const ParamRecord& p : registry_.params()) placed.push_back({p.name, p.device});
  PlacementRules rules;
  rules.comm_name = comm_.name();
  // No bit at all: a plugin that never set the field (nothing read it before 1.7) moves host memory.
  rules.comm_device_mask = comm_caps_.device_mask != 0 ? comm_caps_.device_mask
                                                       : STRATA_DEVICE_BIT(STRATA_DEVICE_HOST);
  rules.offload_name = offload_.name();
  rules.offload_device_type = offload_caps_.device_type;
  rules.plugins = {{"sharding", sharding_.name(), sharding_.ops().header.built_minor},
                   {"precision", precision_.name(), precision_.ops().header.built_minor},
                   {"offload", offload_.name(), offload_.ops().header.built_minor}};
  const strata_device device = check_device_placement(placed, rules);
  host_services_.set_device(device);
  model_copies_.set_device(device);
  if (device.type == STRATA_DEVICE_CUDA && world_.rank == 0) {
    logger().info("parameters are in {} memory", device_text(device));
  }
}

void Engine::setup_after_registration() {
  if (registry_.params().empty()) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT, "finalize: no parameters were registered");
  }
  uint32_t index = 0;
  const bool groups = sharding_has_groups();
  check_deferred_values();  // before the sharding plugin sees a NULL data
  if (!registry_.groups().empty() && !groups) {
    logger().info("sharding plugin '{}' has no parameter groups: gather and release do nothing",
                  sharding_.name());
  }
  for (const ParamRecord& p : registry_.params()) {
    if (p.grad == nullptr && !groups) {
      throw Error(STRATA_ERR_UNSUPPORTED,
                  "finalize: parameter " + p.signature() + " has no gradient buffer, and sharding "
                  "plugin '" + sharding_.name() + "' (no parameter groups) cannot provide one: "
                  "register a grad");
    }
    if (p.dtype != precision_caps_.model_dtype) {
      throw Error(STRATA_ERR_INVALID_ARGUMENT,
                  "finalize: parameter " + p.signature() + " must be " +
                      strata_dtype_name(precision_caps_.model_dtype) + ", the model dtype of " +
                      "precision plugin '" + precision_.name() + "'");
    }
    const strata_param_desc desc = p.desc();
    sharding_.call("register_param", &strata_sharding_ops::register_param, index++, &desc);
  }
  if (groups) {
    uint32_t id = 0;
    for (const GroupRecord& g : registry_.groups()) {
      sharding_.call("define_group", &strata_sharding_ops::define_group, id++, g.name.c_str(),
                     g.params.data(), g.params.size());
    }
  }
  sharding_.call("finalize", &strata_sharding_ops::finalize);
  record_host_buffers();
  const std::span<const strata_shard> shards = init_shards();
  offload_.call("init_state", &strata_offload_ops::init_state, shards.data(), shards.size());
  // The host starts from zero gradients and accumulates into them.
  sharding_.call("zero_grad", &strata_sharding_ops::zero_grad);
}

bool Engine::sharding_feature(uint32_t bit) const {
  return runtime_abi_minor() >= 9 &&
         STRATA_STRUCT_HAS(&sharding_caps_, strata_sharding_caps, features) &&
         (sharding_caps_.features & bit) != 0;
}

// Before the sharding plugin's finalize, which would read `data`: only a plugin that says it
// partitions such parameters gets them, and only in a group (gathered FOR_WRITE later).
void Engine::check_deferred_values() const {
  for (uint32_t i = 0; i < registry_.params().size(); ++i) {
    const ParamRecord& p = registry_.params()[i];
    if (p.data != nullptr) continue;
    if (!sharding_feature(STRATA_SHARDING_DEFERRED_VALUES)) {
      throw Error(STRATA_ERR_INVALID_ARGUMENT,
                  "finalize: parameter " + p.signature() + " was registered without data, "
                  "but sharding plugin '" + sharding_.name() + "' (stage " +
                      std::to_string(sharding_caps_.stage) + ", runtime ABI " +
                      runtime_abi_text() + ") keeps parameters in the host's buffers: register "
                      "its data (deferred values need ZeRO stage 3 with plugins/zero, ABI 1.9)");
    }
    if (!registry_.grouped(i)) {
      throw Error(STRATA_ERR_INVALID_ARGUMENT,
                  "finalize: parameter " + p.signature() + " was registered without data but is "
                  "in no group, so nothing can gather it to write its values: define its group "
                  "or register its data");
    }
  }
}

// Host-owned buffers are part of this rank's model state while the sharding stratum keeps using
// them; its views say which (at stage 3 partitioned parameters leave the host's buffers).
void Engine::record_host_buffers() {
  for (uint32_t i = 0; i < registry_.params().size(); ++i) {
    const ParamRecord& p = registry_.params()[i];
    const strata_param_view view = param_view(i);
    const strata_mem_location where = memory_location(p.device);
    if (p.data != nullptr && view.data == p.data) {  // NULL: deferred values, the plugin's memory
      ledger_.record(STRATA_MEM_PARAMS, p.bytes(), where);
    }
    if (p.grad != nullptr && view.grad == p.grad) ledger_.record(STRATA_MEM_GRADS, p.bytes(), where);
  }
}

uint32_t Engine::define_group(const std::string& name, const uint32_t* params, size_t count) {
  if (finalized_) throw Error(STRATA_ERR_INVALID_ARGUMENT, "define_group: called after finalize");
  return registry_.add_group(name, params, count);
}

void Engine::gather(uint32_t group, uint32_t flags) {
  require_finalized("gather");
  check_group_id("gather", group);
  if ((flags & ~(STRATA_GATHER_FOR_BACKWARD | STRATA_GATHER_FOR_WRITE)) != 0) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                "gather: unknown flags " + std::to_string(flags) +
                    " (expected 0, STRATA_GATHER_FOR_BACKWARD and/or STRATA_GATHER_FOR_WRITE)");
  }
  const bool write = (flags & STRATA_GATHER_FOR_WRITE) != 0;
  if (write && !sharding_feature(STRATA_SHARDING_WRITABLE_GATHER)) {
    throw Error(STRATA_ERR_UNSUPPORTED,
                "gather: STRATA_GATHER_FOR_WRITE of group '" + registry_.groups()[group].name +
                    "': sharding plugin '" + sharding_.name() + "' (stage " +
                    std::to_string(sharding_caps_.stage) + ", runtime ABI " + runtime_abi_text() +
                    ") cannot make written values the parameters' (it needs "
                    "STRATA_SHARDING_WRITABLE_GATHER, ABI 1.9: plugins/zero at stage 3); where "
                    "the host's buffers are the parameters, write those before finalize");
  }
  guarded(ApiCall::Gather, group, [&] {
    open_micro_batch();
    record_call({CallKind::Gather, group, flags});
    sharding_gather(group, flags);
  });
}

void Engine::sharding_gather(uint32_t group, uint32_t flags) {
  if (!sharding_has_groups()) return;
  const strata_group_args args = group_args(group, flags);
  sharding_.call("gather", &strata_sharding_ops::gather, &args);
}

void Engine::sharding_release(uint32_t group) {
  if (!sharding_has_groups()) return;
  const strata_group_args args = group_args(group, 0);
  sharding_.call("release", &strata_sharding_ops::release, &args);
}

void Engine::sharding_grad_ready(uint32_t index) {
  const strata_grad_ready_args args = grad_ready_args(index, boundary());
  sharding_.call("grad_ready", &strata_sharding_ops::grad_ready, &args);
}

void Engine::release(uint32_t group) {
  require_finalized("release");
  check_group_id("release", group);
  guarded(ApiCall::Release, group, [&] {
    open_micro_batch();
    record_call({CallKind::Release, group});
    sharding_release(group);
  });
}

strata_param_view Engine::param_view(uint32_t index) const {
  check_param_index("param_view", index);
  const ParamRecord& p = registry_.params()[index];
  strata_param_view view{};
  view.struct_size = sizeof(view);
  view.data = p.data;
  view.grad = p.grad;
  view.count = p.count;
  view.dtype = p.dtype;
  if (sharding_has_groups()) {
    sharding_.call("param_view", &strata_sharding_ops::param_view, index, &view);
    view.struct_size = sizeof(view);
  }
  return view;
}

void Engine::check_param_index(const char* call, uint32_t index) const {
  if (index >= registry_.params().size()) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                std::string(call) + ": no parameter with index " + std::to_string(index) + " (" +
                    std::to_string(registry_.params().size()) + " registered)");
  }
}

void Engine::check_group_id(const char* call, uint32_t group) const {
  if (group >= registry_.groups().size()) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                std::string(call) + ": no group with id " + std::to_string(group) + " (" +
                    std::to_string(registry_.groups().size()) + " defined)");
  }
}

void Engine::require_finalized(const char* call) const {
  if (!finalized_) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT, std::string(call) + ": call strata_finalize first");
  }
}

void Engine::grad_ready(uint32_t index) {
  require_finalized("grad_ready");
  check_param_index("grad_ready", index);
  guarded(ApiCall::GradReady, index, [&] {
    open_micro_batch();
    record_call({CallKind::GradReady, index});
    sharding_grad_ready(index);
  });
}

double Engine::loss_scale() const {
  double scale = 1.0;
  precision_.call("loss_scale", &strata_precision_ops::loss_scale, &scale);
  return scale;
}

}  // namespace strata::rt
