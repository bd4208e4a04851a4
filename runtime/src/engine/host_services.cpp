#include "engine/host_services.hpp"

#include "device/cuda_device.hpp"
#include "log.hpp"
#include "loader/runtime_abi.hpp"

#include <algorithm>

namespace strata::rt {

const strata_host_api* HostServices::make_table(std::string plugin_label,
                                                const strata_comm_ops* comm, void* comm_self,
                                                const strata_precision_ops* precision,
                                                void* precision_self) {
  auto ctx = std::make_unique<Context>();
  ctx->owner = this;
  ctx->label = std::move(plugin_label);
  strata_host_api& api = ctx->api;
  // The minor this runtime reports (an older one under STRATA_EMULATE_ABI_MINOR): the table has
  // that minor's size, so the services of later minors are absent, as from a runtime of that minor.
  const uint32_t minor = runtime_abi_minor();
  api.struct_size = host_api_size(minor);
  api.abi_major = STRATA_ABI_MAJOR;
  api.runtime_minor = minor;
  api.host_ctx = ctx.get();
  api.log = &HostServices::log;
  api.alloc_bytes = &HostServices::alloc_bytes;
  api.free_bytes = &HostServices::free_bytes;
  api.comm = comm;
  api.comm_self = comm_self;
  api.precision = precision;
  api.precision_self = precision_self;
  api.alloc_bytes_at = &HostServices::alloc_bytes_at;
  api.account_bytes = &HostServices::account_bytes;
  if (STRATA_STRUCT_HAS(&api, strata_host_api, log_enabled)) {
    api.log_enabled = &HostServices::log_enabled;
  }
  if (STRATA_STRUCT_HAS(&api, strata_host_api, trace_span)) {
    api.trace_enabled = &HostServices::trace_enabled;
    api.trace_span = &HostServices::trace_span;
  }
  if (STRATA_STRUCT_HAS(&api, strata_host_api, cuda_stream)) {
    api.device = &HostServices::device;
    api.cuda_stream = &HostServices::cuda_stream;
  }
  if (STRATA_STRUCT_HAS(&api, strata_host_api, offload_self)) {
    api.offload = nullptr;  // lend_offload fills the sharding plugin's
    api.offload_self = nullptr;
  }
  contexts_.push_back(std::move(ctx));
  return &contexts_.back()->api;
}

void HostServices::lend_offload(const strata_host_api* table, const strata_offload_ops* offload,
                                void* offload_self) {
  for (const auto& context : contexts_) {
    strata_host_api& api = context->api;
    if (&api != table || !STRATA_STRUCT_HAS(&api, strata_host_api, offload_self)) continue;
    api.offload = offload;
    api.offload_self = offload_self;
  }
}

void HostServices::log(void* ctx, int32_t level, const char* message) {
  const auto* context = static_cast<const Context*>(ctx);
  const int clamped = std::clamp<int32_t>(level, STRATA_LOG_TRACE, STRATA_LOG_ERROR);
  // strata_log_level and spdlog's levels share the order trace..error.
  logger().log(static_cast<spdlog::level::level_enum>(clamped), "{}: {}", context->label,
               message != nullptr ? message : "");
}

int32_t HostServices::log_enabled(void*, int32_t level) {
  const int clamped = std::clamp<int32_t>(level, STRATA_LOG_TRACE, STRATA_LOG_ERROR);
  // One relaxed atomic load of the logger's level: no lock, no formatting.
  return logger().should_log(static_cast<spdlog::level::level_enum>(clamped)) ? 1 : 0;
}

void* HostServices::alloc_bytes(void* ctx, size_t bytes, size_t alignment, int32_t category) {
  return static_cast<Context*>(ctx)->owner->ledger_.allocate(bytes, alignment, category);
}

void HostServices::free_bytes(void* ctx, void* ptr) {
  static_cast<Context*>(ctx)->owner->ledger_.release(ptr);
}

void* HostServices::alloc_bytes_at(void* ctx, size_t bytes, size_t alignment, int32_t category,
                                   int32_t location) {
  auto* context = static_cast<Context*>(ctx);
  // Device memory exists for plugins of 1.7 on (an emulated older runtime has none to give).
  if (location == STRATA_MEM_DEVICE &&
      STRATA_STRUCT_HAS(&context->api, strata_host_api, cuda_stream)) {
    return context->owner->alloc_device(*context, bytes, category);
  }
  // Disk is accounted, never allocated: the ledger answers NULL for it, as the ABI says. cudaMalloc
  // aligns to 256 bytes at least, which covers any alignment a plugin asks of device memory.
  return context->owner->ledger_.allocate(bytes, alignment, category, location);
}

void* HostServices::alloc_device(Context& context, size_t bytes, int32_t category) {
  const strata_device where = device();
  std::string why;
  void* ptr = nullptr;
  if (where.type != STRATA_DEVICE_CUDA) {
    why = cuda::built_with_cuda() ? "the job's parameters are in host memory, so it has no device"
                                  : cuda::without_cuda_reason();
  } else {
    ptr = ledger_.allocate_device(bytes, category, where.index, &why);
  }
  if (ptr == nullptr && !context.device_refusal_logged.exchange(true)) {
    logger().warn("{}: alloc_bytes_at(STRATA_MEM_DEVICE, {} bytes) returns NULL: {}", context.label,
                  bytes, why);
  }
  return ptr;
}

void HostServices::set_device(strata_device where) {
  device_index_.store(where.index, std::memory_order_relaxed);
  device_type_.store(where.type, std::memory_order_release);
}

strata_device HostServices::device() const {
  const int32_t type = device_type_.load(std::memory_order_acquire);
  return strata_device{type, device_index_.load(std::memory_order_relaxed)};
}

strata_device HostServices::device(void* ctx) {
  return static_cast<const Context*>(ctx)->owner->device();
}

void* HostServices::cuda_stream(void* ctx) {
  return static_cast<const Context*>(ctx)->owner->stream();
}

void HostServices::account_bytes(void* ctx, int32_t category, int32_t location, int64_t delta) {
  const auto* context = static_cast<const Context*>(ctx);
  if (!context->owner->ledger_.account(category, location, delta)) {
    // No status to return through this call: the log is the only place the bug can show.
    logger().error("{}: account_bytes: expected a strata_mem_category (0..{}) and a "
                   "strata_mem_location (0..{}), got {} and {}",
                   context->label, STRATA_MEM_CATEGORY_COUNT - 1, STRATA_MEM_LOCATION_COUNT - 1,
                   category, location);
  }
}

int32_t HostServices::trace_enabled(void* ctx) {
  return static_cast<const Context*>(ctx)->owner->timeline_wanted_ ? 1 : 0;
}

void HostServices::trace_span(void* ctx, const strata_trace_span* span) {
  const auto* context = static_cast<const Context*>(ctx);
  Timeline* timeline = context->owner->timeline_.load(std::memory_order_acquire);
  if (timeline == nullptr || span == nullptr || span->struct_size < sizeof(strata_trace_span) ||
      span->name == nullptr || span->end_ns < span->begin_ns) {
    return;  // off, not yet on, or a span the header says is dropped
  }
  timeline->span(context->label.c_str(), span->name, span->begin_ns, span->end_ns, span->index,
                 span->bytes, 0, (span->flags & STRATA_TRACE_IN_FLIGHT) != 0);
}

}  // namespace strata::rt
