// The comm stratum as the runtime and the other plugins reach it: the comm plugin's own ops table
// behind a proxy table that records every collective, and every wait for one, on the
// ActivityBoard, in the step's time split (comm_wait) and on the timeline when one is recorded.
// The stall inspector needs to know when a rank is blocked and in which collective, whoever
// started it (the runtime, or the sharding plugin through its host table), and the comm plugin
// need not cooperate for that. The stall message's "allreduce #17" is the timeline's event with
// "seq": 17. The cost is a few relaxed stores and two clock reads per collective.
#pragma once

#include "faults/activity.hpp"
#include "timeline/step_time.hpp"
#include "timeline/timeline.hpp"

#include <strata/plugin_api.h>

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace strata::rt {

// `mask` (a comm's caps.collective_mask) without the bits of collectives whose function in `ops`
// is NULL: the header says such a bit is ignored, and the runtime clears it before anyone reads it.
uint32_t offered_collectives(const strata_comm_ops& ops, uint32_t mask);

class TrackedComm {
 public:
  // `ops`/`self` are the comm plugin's instance (today's layout: its own checked table, or the
  // legacy adapter's); both must outlive this object. The proxy's optional members (allgatherv,
  // reduce_scatter, wait, test) are NULL exactly when the wrapped table's are.
  // `board`, `step_time` and `timeline` (the engine's slot) must outlive it too.
  TrackedComm(const strata_comm_ops& ops, void* self, ActivityBoard& board, StepTime& step_time,
              const TimelineSlot& timeline);
  TrackedComm(const TrackedComm&) = delete;
  TrackedComm& operator=(const TrackedComm&) = delete;

  // After this rank failed alone: every later call fails at once instead of waiting for ranks that
  // are ending (a plugin's teardown may wait on requests it still holds). Thread-safe. The
  // sub-group instances split() made from this one are abandoned with it.
  void abandon() { abandoned_ = true; }

  // The proxy table (today's layout, its header this runtime's) and the `self` to pass to it (lent
  // to plugins in their host tables).
  const strata_comm_ops* ops() const { return &table_; }
  void* self() const { return const_cast<TrackedComm*>(this); }

 private:
  static TrackedComm& of(void* self) { return *static_cast<TrackedComm*>(self); }
  // A sub-group instance the plugin's split made (ABI 1.10), tracked like its parent: owned by
  // this proxy (destroy() frees both), refused when the parent is abandoned.
  TrackedComm(const TrackedComm& parent, void* child);
  bool is_abandoned() const {
    return abandoned_ || (parent_abandoned_ != nullptr && parent_abandoned_->load());
  }
  strata_status refuse(strata_error* err) const;
  // Records the start (and, when `req` is NULL, the blocking wait) of collective `name`.
  template <class Call>
  strata_status collective(const char* name, const strata_coll_args* args, strata_request* req,
                           strata_error* err, Call&& call);
  // Runs `call`, counting its time as comm_wait, and puts it on the timeline (with `seq` and the
  // size of `args`' buffers, read only then; `args` may be NULL) when one is set.
  template <class Call>
  strata_status timed(const char* name, uint64_t seq, const strata_coll_args* args, Call&& call);

  static strata_status create(const strata_plugin_create_args*, void**, strata_error* err);
  // The engine's proxy is the engine's (nothing to do); a sub-group's frees it and its instance.
  static void destroy(void* self);
  static strata_status query(void* self, strata_comm_caps* caps, strata_error* err);
  static strata_status allreduce(void* self, const strata_coll_args* args, strata_request* req,
                                 strata_error* err);
  static strata_status allgather(void* self, const strata_coll_args* args, strata_request* req,
                                 strata_error* err);
  static strata_status allgatherv(void* self, const strata_coll_args* args, strata_request* req,
                                  strata_error* err);
  static strata_status reduce_scatter(void* self, const strata_coll_args* args,
                                      strata_request* req, strata_error* err);
  static strata_status broadcast(void* self, const strata_coll_args* args, strata_request* req,
                                 strata_error* err);
  static strata_status barrier(void* self, const strata_coll_args* args, strata_request* req,
                               strata_error* err);
  static strata_status wait(void* self, strata_request req, strata_error* err);
  static strata_status test(void* self, strata_request req, int32_t* done, strata_error* err);
  static strata_status alltoallv(void* self, const strata_coll_args* args, strata_request* req,
                                 strata_error* err);
  static strata_status split(void* self, const strata_comm_split_args* args, void** child,
                             strata_error* err);
  void fill_table();

  const strata_comm_ops& real_;
  void* real_self_;
  ActivityBoard& board_;
  StepTime& step_time_;
  const TimelineSlot& timeline_;
  std::mutex requests_mutex_;  // the collective each request in flight belongs to (timeline only)
  std::unordered_map<strata_request, uint64_t> request_seq_;
  std::atomic<bool> abandoned_{false};
  // A sub-group's: the flag of the engine's proxy at the root of its splits.
  const std::atomic<bool>* parent_abandoned_ = nullptr;
  bool owns_instance_ = false;  // a sub-group: destroy() frees the plugin's instance
  // A sub-group's collectives stay off the activity board: its counts are compared between all
  // the world's ranks (stall reports, departed peers), and only a group's members make them.
  bool on_board_ = true;
  strata_comm_ops table_{};
};

}  // namespace strata::rt
