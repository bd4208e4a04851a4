// The host-services tables lent to plugins (strata_host_api): logging attributed to the plugin,
// accounted allocation (pageable or pinned) and disk accounting through the MemoryLedger, and the
// comm/precision strata's instances (in today's table layout: the tracked comm proxy and the
// precision instance's table; a 1.0-1.2 plugin's adapter converts them for it), log_enabled
// (1.4), trace_enabled / trace_span (1.5: spans go to the Timeline, with the stratum's name as
// their category), and the job's CUDA device and stream with device allocation (1.7). Each table
// reports runtime_abi_minor() and has that minor's struct_size.
#pragma once

#include "engine/memory_ledger.hpp"
#include "timeline/timeline.hpp"

#include <strata/plugin_api.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace strata::rt {

class HostServices {
 public:
  // `timeline` (the engine's slot) must outlive this object.
  HostServices(MemoryLedger& ledger, const TimelineSlot& timeline)
      : ledger_(ledger), timeline_(timeline) {}
  HostServices(const HostServices&) = delete;
  HostServices& operator=(const HostServices&) = delete;

  // A table for one plugin instance; throws if STRATA_EMULATE_ABI_MINOR is invalid. Its address is
  // stable for the HostServices' lifetime, which
  // outlives every plugin instance (the engine declares it first).
  const strata_host_api* make_table(std::string plugin_label, const strata_comm_ops* comm,
                                    void* comm_self, const strata_precision_ops* precision,
                                    void* precision_self);

  // ABI 1.8: lends the offload stratum's table and instance to `table` (the sharding plugin's, as
  // make_table returned it), once both strata are created. A table of an emulated older minor has
  // no such fields and is left as it is.
  void lend_offload(const strata_host_api* table, const strata_offload_ops* offload,
                    void* offload_self);

  // Whether the job records a timeline: what trace_enabled answers, known from the manifest before
  // any plugin is created (spans that arrive before the timeline is in its slot are dropped).
  void set_timeline_wanted(bool wanted) { timeline_wanted_ = wanted; }

  // Where the parameters are (finalize sets it; HOST before): what device() answers, and where
  // alloc_bytes_at(STRATA_MEM_DEVICE) allocates.
  void set_device(strata_device device);
  strata_device device() const;
  // The host's stream (strata_set_stream): what cuda_stream() answers.
  void set_stream(void* stream) { stream_.store(stream, std::memory_order_release); }
  void* stream() const { return stream_.load(std::memory_order_acquire); }

 private:
  struct Context {
    HostServices* owner;
    std::string label;
    strata_host_api api;
    std::atomic<bool> device_refusal_logged{false};
  };
  static void log(void* ctx, int32_t level, const char* message);
  static int32_t log_enabled(void* ctx, int32_t level);
  static void* alloc_bytes(void* ctx, size_t bytes, size_t alignment, int32_t category);
  static void free_bytes(void* ctx, void* ptr);
  static void* alloc_bytes_at(void* ctx, size_t bytes, size_t alignment, int32_t category,
                              int32_t location);
  static void account_bytes(void* ctx, int32_t category, int32_t location, int64_t delta);
  static int32_t trace_enabled(void* ctx);
  static void trace_span(void* ctx, const strata_trace_span* span);
  static strata_device device(void* ctx);
  static void* cuda_stream(void* ctx);
  // alloc_bytes_at(STRATA_MEM_DEVICE): on the job's CUDA device, or NULL with the reason logged
  // once per plugin.
  void* alloc_device(Context& context, size_t bytes, int32_t category);

  MemoryLedger& ledger_;
  bool timeline_wanted_ = false;
  std::atomic<int32_t> device_type_{STRATA_DEVICE_HOST};
  std::atomic<int32_t> device_index_{0};
  std::atomic<void*> stream_{nullptr};
  const TimelineSlot& timeline_;
  std::vector<std::unique_ptr<Context>> contexts_;
};

}  // namespace strata::rt
