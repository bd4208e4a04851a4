#include "amp_plugin.hpp"

#include <cstdio>
#include <strata/cpu_threads.hpp>
#include <string>

#include "cast.hpp"
#include "grad_stats.hpp"
#include "isa.hpp"
#include "scaler_state.hpp"

namespace strata::amp {
namespace {

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

}  // namespace

AmpPlugin::AmpPlugin(const char* config_json, const strata_host_api* host)
    : host_(host),
      config_(parse_precision_config(config_json)),
      isa_(common::cpu::choose_isa(kLegacyIsaVariable)),
      threads_source_(),
      exec_{&kernels_for(isa_.isa), 0},
      scaler_(config_.scaler),
      rank0_(rank_of(host) == 0),
      tracer_(host_),
      scratch_(host_) {
  const sdk::CpuThreads threads = thread_budget(config_.threads, host);
  exec_.threads = threads.count;
  threads_source_ = threads.source;
  log_setup();
}

void AmpPlugin::log_setup() const {
  for (const std::string& w : config_.warnings) host_.log(STRATA_LOG_WARN, "%s", w.c_str());
  if (!isa_.deprecation.empty()) {
    host_.log(STRATA_LOG_WARN, "strata_amp: %s", isa_.deprecation.c_str());
  }
  if (!rank0_) return;
  const LossScalerConfig& s = config_.scaler;
  std::string mode = "fp32 (no loss scaling)";
  if (config_.model_dtype == STRATA_BF16) mode = "bf16 (no loss scaling; non-finite steps skipped)";
  if (config_.model_dtype == STRATA_F16) {
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
  host_.log(STRATA_LOG_INFO, "precision %s; casts use %s kernels (cpu: %s), up to %u threads (%s)",
            mode.c_str(), isa_.describe().c_str(), cpu_features().c_str(), exec_.threads,
            threads_source_.c_str());
}

void AmpPlugin::query(strata_precision_caps& caps) const {
  if (STRATA_STRUCT_HAS(&caps, strata_precision_caps, model_dtype)) {
    caps.model_dtype = config_.model_dtype;
  }
  if (STRATA_STRUCT_HAS(&caps, strata_precision_caps, dynamic_scaling)) {
    caps.dynamic_scaling = config_.model_dtype == STRATA_F16 && scaler_.dynamic() ? 1 : 0;
  }
}

double AmpPlugin::loss_scale() const {
  return config_.model_dtype == STRATA_F16 ? scaler_.scale() : 1.0;
}

// Host shards on the CPU kernels as always; shards in device memory (the job's device is CUDA,
// ABI 1.7) in one multi-tensor pass there.
GradStats AmpPlugin::all_grad_stats(std::span<const strata_shard> shards) {
  if (!shards_on_device(host_)) return amp::grad_stats(shards, exec_);
  for (size_t i = 0; i < shards.size(); ++i) check_grad_shard(shards[i], i);
  return device_grad_stats(shards, scratch_, host_stream(host_));
}

void AmpPlugin::grad_stats(std::span<const strata_shard> shards, strata_grad_stats& stats) {
  const int64_t begin = tracer_.now();
  const GradStats result = all_grad_stats(shards);
  if (tracer_.enabled()) {  // the shards are valid now: grad_stats checked them
    uint64_t bytes = 0;
    for (const strata_shard& s : shards) bytes += s.count * sizeof(float);
    tracer_.span("grad_stats", begin, -1, bytes);
  }
  if (STRATA_STRUCT_HAS(&stats, strata_grad_stats, nonfinite)) {
    stats.nonfinite = result.nonfinite ? 1 : 0;
  }
  if (STRATA_STRUCT_HAS(&stats, strata_grad_stats, sum_sq)) stats.sum_sq = result.sum_sq;
}

// fp16: DeepSpeed's update_scale. At the minimum it fails like DeepSpeed's exception, after
// logging the recent scales so the run's last steps can be read from the log.
void AmpPlugin::update_fp16(bool overflow) {
  const double before = scaler_.scale();
  const uint64_t step = scaler_.steps() + 1;
  const auto steps = static_cast<unsigned long long>(step);
  switch (scaler_.update(overflow)) {
    case ScaleChange::at_minimum: {
      const std::string history = scaler_.history_text();
      if (rank0_) {
        host_.log(STRATA_LOG_ERROR, "fp16 loss scale history (step, scale, overflow): %s",
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
      host_.log(STRATA_LOG_DEBUG, "step %llu overflow: loss scale stays %g, hysteresis now %lld",
                   steps, before, static_cast<long long>(scaler_.hysteresis_left()));
      break;
    case ScaleChange::decreased:
    case ScaleChange::doubled:
      host_.log(STRATA_LOG_DEBUG, "step %llu%s: loss scale %g -> %g", steps,
                   overflow ? " overflow" : "", before, scaler_.scale());
      break;
    case ScaleChange::kept:
      break;
  }
}

void AmpPlugin::update(bool overflow) {
  if (config_.model_dtype == STRATA_F16) update_fp16(overflow);
  // fp32 and bf16 have no scale; the runtime logs the skipped step itself.
}

void AmpPlugin::cast(const strata_buffer& src, const strata_buffer& dst) const {
  const int64_t begin = tracer_.now();
  amp::cast(src, dst, exec_, host_stream(host_));
  // After the cast: its descriptors are checked, so count and dtype may be read.
  tracer_.span("cast", begin, -1, src.count * sdk::dtype_size(src.dtype));
}

// fp32 and bf16 save only their dtype, so that a load into the wrong precision is still refused.
void AmpPlugin::save_state(char* buffer, size_t capacity, size_t* length) const {
  sdk::write_state_text(save_scaler_state(config_, scaler_), buffer, capacity, length);
}

void AmpPlugin::load_state(const char* json) {
  for (const std::string& note : load_scaler_state(json, config_, scaler_)) {
    if (rank0_) host_.log(STRATA_LOG_WARN, "load_state: %s", note.c_str());
  }
  if (rank0_ && config_.model_dtype == STRATA_F16) {
    host_.log(STRATA_LOG_INFO, "fp16 loss scale resumed at %g after %llu updates", scaler_.scale(),
              static_cast<unsigned long long>(scaler_.steps()));
  }
}

}  // namespace strata::amp
