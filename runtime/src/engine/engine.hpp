// The engine: creates the four strata from a manifest and runs the step pipeline (DESIGN.md,
// "The step pipeline"). One instance per process; used by one thread at a time.
#pragma once

#include "faults/activity.hpp"
#include "checkpoint/checkpoint_writer.hpp"
#include "engine/collectives.hpp"
#include "engine/host_group.hpp"
#include "faults/control_channel.hpp"
#include "engine/host_services.hpp"
#include "manifest/manifest.hpp"
#include "engine/memory_ledger.hpp"
#include "engine/model_copies.hpp"
#include "engine/param_registry.hpp"
#include "error.hpp"
#include "loader/plugin_instance.hpp"
#include "timeline/step_time.hpp"
#include "timeline/timeline.hpp"
#include "faults/tracked_comm.hpp"
#include "faults/watchdog.hpp"
#include "schedule/lr_schedule.hpp"

#include <strata/strata.h>

#include <unistd.h>

#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace strata::rt {

class Engine {
 public:
  explicit Engine(const strata_create_options& options);  // collective
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  strata_world_info world() const { return world_; }
  strata_training_info training() const;
  uint32_t register_param(const strata_param_desc& desc);
  void finalize();  // collective
  void grad_ready(uint32_t index);
  // API 1.1 parameter groups; see strata.h. Without a group-aware sharding plugin, gather and
  // release do nothing and views are the registered buffers.
  uint32_t define_group(const std::string& name, const uint32_t* params, size_t count);
  // Collective where the sharding stage moves parameters or gradients on gather/release (stages
  // 2-3 in plugins/zero).
  void gather(uint32_t group, uint32_t flags);
  void release(uint32_t group);
  strata_param_view param_view(uint32_t index) const;
  bool finalized() const { return finalized_; }
  strata_step_result step();  // collective
  double loss_scale() const;
  const Collectives& collectives() const { return *collectives_; }
  // API 1.13 (strata_group_create): the sub-group of the ranks that pass `color`, or nullptr for
  // STRATA_COMM_SPLIT_NONE; collective over every rank. Owned here until destroy_group or the
  // engine's end.
  HostGroup* create_group(int32_t color, int32_t key);
  void destroy_group(HostGroup* group);
  strata_memory_report memory() const { return ledger_.report(); }

  // Checkpoints (API 1.6; engine_checkpoint.cpp). All collective.
  struct SaveRequest {
    std::string dir, tag, extra_json;
    bool blocking = false;
    bool automatic = false;  // the checkpoint block's: every rank saves it, joined ones too
  };
  struct Loaded {
    std::string tag, extra_json;
    uint64_t global_steps = 0, skipped_steps = 0;
  };
  void save(const SaveRequest& request);
  void save_wait();
  const Loaded& load(const std::string& dir, const std::string& tag);
  // The manifest's checkpoint block (API 1.11): the host state the automatic saves keep (a JSON
  // object text, checked here), and what strata_finalize's auto_resume loaded (null: nothing).
  void set_host_state(const std::string& extra_json);
  const Loaded* resumed() const {
    require_finalized("resumed");
    return resumed_ ? &*resumed_ : nullptr;
  }
  // The learning rate the next optimizer step uses (NaN when the optimizer reports none), and the
  // host's override of it (NaN clears it). engine_schedule.cpp.
  double lr() const;
  void set_lr(double lr);
  // Uneven data (API 1.12, engine_join.cpp; the manifest's "join": true). Collective with the
  // micro-batches the other ranks still run: this rank has no more data, so it mirrors their
  // micro-batches with zero contributions until every rank has joined; returns how many it
  // mirrored.
  uint64_t join();
  // The host's strata_allreduce, allgather, broadcast and barrier (engine_host_collectives.cpp):
  // with "join", recorded for a later joined rank to repeat, and run against the replay of the
  // ranks that have joined.
  void host_allreduce(const void* send, void* recv, uint64_t count, int32_t dtype, int32_t op);
  void host_allgather(const void* send, void* recv, uint64_t count_per_rank, int32_t dtype);
  void host_broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root);
  void host_barrier();
  // The host's CUDA stream (API 1.7), which plugins read through the host services.
  void set_stream(void* stream) { host_services_.set_stream(stream); }

 private:
  void start_watchdog();
  // Collective: opens the timeline when the manifest or STRATA_TIMELINE asks for one.
  void open_timeline();
  // At strata_destroy: rank 0 writes the whole timeline after a clean run; after a failure this
  // rank keeps its own part with the failure's message.
  void finish_timeline();
  // The time split of the step just taken, into `result`, and its log line under
  // wall_clock_breakdown.
  void report_step_time(strata_step_result& result);
  // The wall_clock_breakdown line for a window of steps_per_print steps.
  void log_breakdown(const StepTimes& window) const;
  void create_training_strata(LoadedPlugin precision, LoadedPlugin sharding, LoadedPlugin offload);
  void check_capabilities() const;
  // finalize's first step: checks where the parameters are against what the strata can move
  // (device_placement.hpp) and tells the host services the job's device.
  void place_parameters();
  void setup_after_registration();
  // Runs `body`, then agrees across ranks whether any rank failed, so that a rank that failed
  // locally does not leave the others waiting forever in the next collective.
  template <class Body>
  void run_agreed(const char* phase, Body&& body);
  // Runs a host call that may take part in collectives, after its arguments were checked (a call
  // refused for its arguments has changed nothing, and the host may go on). If it fails, this rank
  // cannot continue (its peers would wait for it forever): the failure is remembered, every later
  // call fails with it, and the watchdog tells the other ranks, which end with this rank's message.
  template <class Body>
  // `measured`: false where the caller's own WorkScope already covers the call.
  auto guarded(ApiCall call, int64_t arg, Body&& body, bool measured = true);
  strata_step_result step_once();
  // The step's counters, loss scale and time split into `result`, after its device work.
  strata_step_result finish_step_result(strata_step_result& result);
  // Runs `body` as one phase of the step: its time counted under `part` of the step split, and a
  // span named `name` on the timeline (engine_calls.hpp).
  template <class Body>
  void phase(const char* name, TimePart part, Body&& body);
  // Ends the run when non-finite gradients keep coming and there is no loss scale to lower.
  [[noreturn]] void fail_runaway_skips(const strata_shard* shards, size_t count);
  bool boundary() const { return (micro_steps_ + 1) % batch_.gradient_accumulation_steps == 0; }
  void require_finalized(const char* call) const;
  void check_param_index(const char* call, uint32_t index) const;
  void check_group_id(const char* call, uint32_t group) const;
  // Whether the sharding plugin's ops table has the optional group calls (fixed at create).
  // The loader made sure the five group functions are all set or all NULL (a legacy plugin's
  // adapter table too), so one of them answers for all.
  bool sharding_has_groups() const { return sharding_.ops().define_group != nullptr; }
  // ABI 1.9: a STRATA_SHARDING_* bit of the sharding caps (never under an emulated older minor).
  bool sharding_feature(uint32_t bit) const;
  void check_deferred_values() const;  // parameters registered without data: allowed here?
  void record_host_buffers();
  void apply_step(const strata_shard* shards, size_t count, double scale, double norm);

  // The manifest's "scheduler" (engine_schedule.cpp).
  void create_schedule();
  // Checkpoints (engine_checkpoint.cpp).
  bool at_accumulation_boundary() const { return micro_steps_ % batch_.gradient_accumulation_steps == 0; }
  std::span<const strata_shard> owned_shards() const;
  // What init_state gets: shard_ranges (ABI 1.8) where both sides have them, else owned_shards.
  std::span<const strata_shard> init_shards() const;
  // Collective: completes a save in progress once every rank has written its file (with `wait`,
  // waits for that); rank 0 then makes it the latest. Throws what a rank's writing threw.
  void finish_save(bool wait);
  // Collective: finish_save(true), then the failure of a background write, if one is unreported.
  void wait_for_save();
  // Throws, naming `who`, when the offload plugin predates the step's lr (ABI 1.6;
  // engine_schedule.cpp).
  void require_step_lr(const std::string& who) const;
  void start_save(const std::string& dir, const std::string& tag, const std::string& extra_text);
  nlohmann::json checkpoint_document(const std::string& tag, const nlohmann::json& extra) const;
  void load_agreed(const std::string& dir, const std::string& tag);
  void restore_counters(const nlohmann::json& document, const std::string& metadata_path);
  // At destroy: waits for a save in progress and completes it; after a failure, leaves it.
  void end_saves();

  Manifest manifest_;
  BatchConfig batch_{};
  strata_world_info world_{};
  // Declaration order is teardown order reversed: plugins go before the comm transport, and
  // everything they allocated is returned to the ledger before it goes; the watchdog outlives the
  // comm stratum, whose teardown (MPI_Finalize) may itself wait on the other ranks.
  MemoryLedger ledger_;
  TimelineSlot timeline_slot_{nullptr};  // timeline_ while it records, for those that record
  HostServices host_services_{ledger_, timeline_slot_};
  ActivityBoard activity_;
  StepTime step_time_;
  StepTimes breakdown_;  // summed since the last wall_clock_breakdown line
  // Outlives everything that records into it: the watchdog, the comm proxy and the plugins.
  std::unique_ptr<Timeline> timeline_;
  std::unique_ptr<ControlChannel> control_;  // ranks > 1
  std::unique_ptr<Watchdog> watchdog_;       // ranks > 1
  PluginInstance<strata_comm_ops> comm_;
  std::unique_ptr<TrackedComm> tracked_comm_;  // what the runtime and plugins call
  std::unique_ptr<Collectives> collectives_;
  // The host's sub-groups: destroyed before the proxy and the comm stratum they came from.
  std::vector<std::unique_ptr<HostGroup>> groups_;
  PluginInstance<strata_precision_ops> precision_;
  PluginInstance<strata_sharding_ops> sharding_;
  PluginInstance<strata_offload_ops> offload_;
  strata_comm_caps comm_caps_{};
  strata_precision_caps precision_caps_{};
  strata_sharding_caps sharding_caps_{};
  strata_offload_caps offload_caps_{};
  ModelCopies model_copies_;

  ParamRegistry registry_;
  bool finalized_ = false;
  uint64_t micro_steps_ = 0;
  uint64_t global_steps_ = 0;
  uint64_t applied_steps_ = 0;
  uint64_t skipped_steps_ = 0;
  uint64_t consecutive_skips_ = 0;
  int64_t creator_pid_ = getpid();  // a forked child's copy must not tear down the parent's
  // The learning rate: the manifest's schedule (null without one) at the step count it keeps,
  // and the host's override (NaN when none).
  std::unique_ptr<LrSchedule> schedule_;
  int64_t schedule_iteration_ = -1;  // DeepSpeed's last_batch_iteration
  double lr_override_ = std::numeric_limits<double>::quiet_NaN();
  uint64_t lr_override_step_ = 0;  // global_steps_ when the host last called set_lr
  // A save whose files are being written, and the memory its state was copied to (kept between
  // saves so that a save's pause does not fault in fresh pages).
  struct PendingSave {
    std::string dir, tag;
    std::unique_ptr<CheckpointWriter> writer;
  };
  std::optional<PendingSave> pending_save_;
  std::string save_failure_;  // a background save that failed, until a save call reports it
  float* snapshot_ = nullptr;  // from ledger_ (category other)
  size_t snapshot_floats_ = 0;
  // The snapshot memory for `floats` values, grown when a save needs more.
  float* snapshot_for(size_t floats);
  Loaded loaded_;  // what the last load returned; its strings outlive the call
  // The checkpoint block's state: the host's latest state for automatic saves, and what the
  // automatic resume loaded. engine_auto_checkpoint.cpp.
  std::string host_state_ = "{}";
  std::optional<Loaded> resumed_;
  void auto_resume();      // collective, at the end of finalize
  void auto_save();        // collective, after each optimizer step
  // Uneven data (engine_join.cpp). With the manifest's "join", each micro-batch opens with a
  // one-number allreduce of how many ranks still contribute; a joined rank replays the runtime
  // calls of its last micro-batch (gathers, releases, grad_ready: the collectives the others make)
  // with nothing to add, and the boundary's gradients are divided by the micro-batches that were
  // contributed rather than by world size x accumulation.
  enum class CallKind : uint8_t { Gather, Release, GradReady, HostAllreduce, HostAllgather, HostBarrier };
  struct RecordedCall {
    CallKind kind;
    uint32_t arg = 0;    // group or parameter index
    uint32_t flags = 0;  // a gather's flags
    uint64_t count = 0;  // a host collective's elements (per rank), dtype and op
    int32_t dtype = 0;
    int32_t op = 0;
    bool operator==(const RecordedCall&) const = default;
  };
  // Whether micro-batches are counted: "join", after finalize.
  bool join_tracking() const { return manifest_.join && finalized_; }
  void replay_host_call(const RecordedCall& call);
  // recv /= by, element by element, for an average made of a sum (engine_host_collectives.cpp).
  static void divide_average(void* recv, uint64_t count, int32_t dtype, uint64_t by);
  // Collective under "join": every rank's [contributes, signature of its last micro-batch's
  // calls]; fails on every rank alike when a joined rank's replay would differ from the others'.
  void open_micro_batch();
  // Under "join": opens the micro-batch and refuses `call` (a collective a joined rank never
  // repeats: strata_save, strata_load, strata_broadcast) while some rank has joined.
  void refuse_while_joined(const char* call);
  // Collective under "join" (else 0, no collective): every rank's micro-batches stepped in the
  // window, summed (returned), and the newest learning-rate override, adopted (a joined rank's host
  // no longer sets it). At a boundary this rank's count starts again.
  uint64_t exchange_window_state(bool boundary);
  void record_call(const RecordedCall& call);
  void close_micro_batch();  // at the end of strata_step
  // What the boundary's gradients are multiplied by: world size x accumulation over the
  // micro-batches contributed in the window (1 without "join").
  double contribution_factor(uint64_t contributions) const;
  void replay(const std::vector<RecordedCall>& calls, size_t from);  // calls[from..]
  // The sharding stratum's part of gather, release and grad_ready (engine.cpp), for the host's
  // calls and a joined rank's replay alike.
  void sharding_gather(uint32_t group, uint32_t flags);
  void sharding_release(uint32_t group);
  void sharding_grad_ready(uint32_t index);
  bool micro_batch_open_ = false;
  bool joined_ = false;                 // inside strata_join
  bool ran_micro_batch_ = false;        // last_calls_ holds a micro-batch's calls
  uint64_t contributing_ranks_ = 0;     // in the open micro-batch
  uint64_t own_contributions_ = 0;      // micro-batches this rank stepped since the last boundary
  std::vector<RecordedCall> calls_, last_calls_;
  uint64_t signature_ = 0xcbf29ce484222325ull;  // FNV-1a of calls_ so far
  uint64_t last_signature_ = 0;                 // of last_calls_
  // The first failure of a guarded call on this rank (code, message); later calls repeat it.
  std::optional<Error> failure_;
};

}  // namespace strata::rt
