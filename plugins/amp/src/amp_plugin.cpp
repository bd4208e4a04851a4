// strata_amp: the entry point and the strata_precision_ops table. fp32, fp16 (DeepSpeed's static
// or dynamic loss scaling) and bf16 (no scaling); casts and grad_stats on the best instruction set.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <strata/cpu_threads.hpp>
#include <strata/plugin.hpp>
#include <string>

#include "cast.hpp"
#include "device_ops.hpp"
#include "grad_stats.hpp"
#include "isa.hpp"
#include "loss_scaler.hpp"
#include "parallel.hpp"
#include "precision_config.hpp"
#include "scaler_state.hpp"

namespace strata::amp {
namespace {

struct Instance {
  sdk::Host host;
  PrecisionConfig config;
  common::cpu::IsaChoice isa;  // the kernel set exec runs, and why
  Exec exec;
  LossScaler scaler;  // only consulted for fp16
  bool rank0;         // logs that every rank would repeat come from rank 0 only
  sdk::Tracer tracer;  // "grad_stats" and "cast" spans on the job's timeline
  DeviceScratch scratch;  // grad_stats' device workspace, for shards in device memory
  std::string threads_source;  // why exec.threads is what it is, for the setup line
};

Instance& instance(void* self) {
  if (self == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "self: NULL precision instance");
  return *static_cast<Instance*>(self);
}

// This process's rank, from the comm stratum; a host without one (single-process tests) is rank 0.
int32_t rank_of(const strata_host_api* host) {
  if (host->comm == nullptr) return 0;
  strata_comm_caps caps{};
  caps.struct_size = sizeof caps;
  strata_error err = sdk::make_error();
  return host->comm->query(host->comm_self, &caps, &err) == STRATA_OK ? caps.rank : 0;
}

// The precision config's `threads` when given, else the rule every plugin shares
// (strata/cpu_threads.hpp: STRATA_CPU_THREADS, OMP_NUM_THREADS, this rank's share of the node).
sdk::CpuThreads thread_budget(unsigned configured, const strata_host_api* host) {
  if (configured != 0) return {configured, "from the precision config's threads"};
  return sdk::cpu_threads(host);
}

void log_setup(const Instance& amp) {
  for (const std::string& w : amp.config.warnings) amp.host.log(STRATA_LOG_WARN, "%s", w.c_str());
  if (!amp.isa.deprecation.empty()) {
    amp.host.log(STRATA_LOG_WARN, "strata_amp: %s", amp.isa.deprecation.c_str());
  }
  if (!amp.rank0) return;
  const LossScalerConfig& s = amp.config.scaler;
  std::string mode = "fp32 (no loss scaling)";
  if (amp.config.model_dtype == STRATA_BF16)
    mode = "bf16 (no loss scaling; non-finite steps skipped)";
  if (amp.config.model_dtype == STRATA_F16) {
    char line[256];
    if (s.static_scale > 0.0) {
      std::snprintf(line, sizeof line, "fp16 with static loss scale %g", s.static_scale);
    } else {
      std::snprintf(
          line, sizeof line,
          "fp16 with dynamic loss scaling from %g (window %lld, hysteresis %lld%s, min %g)",
          s.initial_scale, static_cast<long long>(s.window), static_cast<long long>(s.hysteresis),
          s.consecutive_hysteresis ? ", consecutive" : "", s.min_scale);
    }
    mode = line;
  }
  amp.host.log(STRATA_LOG_INFO,
               "precision %s; casts use %s kernels (cpu: %s), up to %u threads (%s)", mode.c_str(),
               amp.isa.describe().c_str(), cpu_features().c_str(), amp.exec.threads,
               amp.threads_source.c_str());
}

strata_status create(const strata_plugin_create_args* args, void** self, strata_error* err) {
  return sdk::guard(err, [&] {
    if (self == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "self: NULL output pointer");
    const auto [config_json, host] = sdk::read_create_args(args);
    const sdk::Host services(host);
    PrecisionConfig config = parse_precision_config(config_json);
    const common::cpu::IsaChoice isa = common::cpu::choose_isa(kLegacyIsaVariable);
    const sdk::CpuThreads threads = thread_budget(config.threads, host);
    const Exec exec{&kernels_for(isa.isa), threads.count};
    const LossScaler scaler(config.scaler);
    auto* amp = new Instance{services, std::move(config), isa, exec, scaler, rank_of(host) == 0,
                             sdk::Tracer(services), DeviceScratch(services), threads.source};
    *self = amp;
    log_setup(*amp);
  });
}

void destroy(void* self) { delete static_cast<Instance*>(self); }

strata_status query(void* self, strata_precision_caps* caps, strata_error* err) {
  return sdk::guard(err, [&] {
    const Instance& amp = instance(self);
    if (caps == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "caps: NULL");
    if (STRATA_STRUCT_HAS(caps, strata_precision_caps, model_dtype)) {
      caps->model_dtype = amp.config.model_dtype;
    }
    if (STRATA_STRUCT_HAS(caps, strata_precision_caps, dynamic_scaling)) {
      caps->dynamic_scaling = amp.config.model_dtype == STRATA_F16 && amp.scaler.dynamic() ? 1 : 0;
    }
  });
}

strata_status loss_scale(void* self, double* scale, strata_error* err) {
  return sdk::guard(err, [&] {
    const Instance& amp = instance(self);
    if (scale == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "scale: NULL");
    *scale = amp.config.model_dtype == STRATA_F16 ? amp.scaler.scale() : 1.0;
  });
}

// Host shards on the CPU kernels as always; shards in device memory (the job's device is CUDA,
// ABI 1.7) in one multi-tensor pass there.
GradStats all_grad_stats(Instance& amp, std::span<const strata_shard> shards) {
  if (!shards_on_device(amp.host)) return amp::grad_stats(shards, amp.exec);
  for (size_t i = 0; i < shards.size(); ++i) {
    const strata_shard& s = shards[i];
    if (s.struct_size < offsetof(strata_shard, grad) + sizeof(s.grad)) {
      sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "shards[" + std::to_string(i) +
                                                 "].struct_size: too small, got " +
                                                 std::to_string(s.struct_size));
    }
    if (s.count > 0 && s.grad == nullptr) {
      sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
                "shards[" + std::to_string(i) + "].grad: NULL for a non-empty shard");
    }
  }
  return device_grad_stats(shards, amp.scratch, host_stream(amp.host));
}

strata_status grad_stats(void* self, const strata_shard* shards, size_t count,
                         strata_grad_stats* stats, strata_error* err) {
  return sdk::guard(err, [&] {
    Instance& amp = instance(self);
    if (stats == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "stats: NULL");
    sdk::require_array(shards, count, "shards");
    const int64_t begin = amp.tracer.now();
    const GradStats result = all_grad_stats(amp, std::span<const strata_shard>(shards, count));
    if (amp.tracer.enabled()) {  // the shards are valid now: grad_stats checked them
      uint64_t bytes = 0;
      for (size_t i = 0; i < count; ++i) bytes += shards[i].count * sizeof(float);
      amp.tracer.span("grad_stats", begin, -1, bytes);
    }
    if (STRATA_STRUCT_HAS(stats, strata_grad_stats, nonfinite)) {
      stats->nonfinite = result.nonfinite ? 1 : 0;
    }
    if (STRATA_STRUCT_HAS(stats, strata_grad_stats, sum_sq)) stats->sum_sq = result.sum_sq;
  });
}

// fp16: DeepSpeed's update_scale. At the minimum it fails like DeepSpeed's exception, after
// logging the recent scales so the run's last steps can be read from the log.
void update_fp16(Instance& amp, bool overflow) {
  const double before = amp.scaler.scale();
  const uint64_t step = amp.scaler.steps() + 1;
  const auto steps = static_cast<unsigned long long>(step);
  switch (amp.scaler.update(overflow)) {
    case ScaleChange::at_minimum: {
      const std::string history = amp.scaler.history_text();
      if (amp.rank0) {
        amp.host.log(STRATA_LOG_ERROR, "fp16 loss scale history (step, scale, overflow): %s",
                     history.c_str());
      }
      char head[256];
      std::snprintf(head, sizeof head,
                    "fp16 loss scale: gradients overflowed at step %llu with the scale already at "
                    "min_loss_scale %g - cannot decrease scale anymore; ",
                    steps, before);
      sdk::fail(STRATA_ERR_NUMERIC,
                head + std::string("recent (step, scale, overflow): ") + history);
    }
    case ScaleChange::hysteresis_used:
      amp.host.log(STRATA_LOG_DEBUG, "step %llu overflow: loss scale stays %g, hysteresis now %lld",
                   steps, before, static_cast<long long>(amp.scaler.hysteresis_left()));
      break;
    case ScaleChange::decreased:
    case ScaleChange::doubled:
      amp.host.log(STRATA_LOG_DEBUG, "step %llu%s: loss scale %g -> %g", steps,
                   overflow ? " overflow" : "", before, amp.scaler.scale());
      break;
    case ScaleChange::kept:
      break;
  }
}

strata_status update(void* self, int32_t overflow, strata_error* err) {
  return sdk::guard(err, [&] {
    Instance& amp = instance(self);
    if (amp.config.model_dtype == STRATA_F16) return update_fp16(amp, overflow != 0);
    // fp32 and bf16 have no scale; the runtime logs the skipped step itself.
  });
}

strata_status cast(void* self, const strata_buffer* src, const strata_buffer* dst,
                   strata_error* err) {
  return sdk::guard(err, [&] {
    const Instance& amp = instance(self);
    if (src == nullptr || dst == nullptr) {
      sdk::fail(STRATA_ERR_INVALID_ARGUMENT, src == nullptr ? "src: NULL" : "dst: NULL");
    }
    const int64_t begin = amp.tracer.now();
    amp::cast(*src, *dst, amp.exec, host_stream(amp.host));
    // After the cast: its descriptors are checked, so count and dtype may be read.
    amp.tracer.span("cast", begin, -1, src->count * sdk::dtype_size(src->dtype));
  });
}

// ABI 1.6: the loss scaler in the checkpoint (scaler_state.hpp has the text's shape). fp32 and
// bf16 save only their dtype, so that a load into the wrong precision is still refused.
strata_status save_state(void* self, char* buffer, size_t capacity, size_t* length,
                         strata_error* err) {
  return sdk::guard(err, [&] {
    const Instance& amp = instance(self);
    sdk::write_state_text(save_scaler_state(amp.config, amp.scaler), buffer, capacity, length);
  });
}

strata_status load_state(void* self, const char* json, strata_error* err) {
  return sdk::guard(err, [&] {
    Instance& amp = instance(self);
    if (json == nullptr) sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "load_state: json is NULL");
    for (const std::string& note : load_scaler_state(json, amp.config, amp.scaler)) {
      if (amp.rank0) amp.host.log(STRATA_LOG_WARN, "load_state: %s", note.c_str());
    }
    if (amp.rank0 && amp.config.model_dtype == STRATA_F16) {
      amp.host.log(STRATA_LOG_INFO, "fp16 loss scale resumed at %g after %llu updates",
                   amp.scaler.scale(), static_cast<unsigned long long>(amp.scaler.steps()));
    }
  });
}

constexpr strata_precision_ops kOps = {
    .header = sdk::ops_header<strata_precision_ops>(),
    .create = create,
    .destroy = destroy,
    .query = query,
    .loss_scale = loss_scale,
    .grad_stats = grad_stats,
    .update = update,
    .cast = cast,
    .save_state = save_state,
    .load_state = load_state,
};


}  // namespace
}  // namespace strata::amp

STRATA_PLUGIN(strata::amp::kOps, "amp", "0.3.0",
              "number format and loss scaling: fp32, fp16 (DeepSpeed loss scaling), bf16")
