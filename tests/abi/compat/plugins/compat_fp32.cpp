// Precision plugin for the compatibility tests: fp32 models, no loss scaling (scale 1), grad_stats
// as one pass (non-finite flag, fp64 sum of squares), casts between f32 and f16/bf16 (round to
// nearest even, through the SDK's half.hpp, which needs no plugin_api.h). At create it asks the
// lent comm stratum for its caps through host->comm, in its header's layout. Built against the
// 1.0, 1.2 and today's header from this one source.
#include "compat_plugin.hpp"

#include <strata/half.hpp>

#include <cmath>
#include <memory>

namespace {

struct Fp32 {
  const strata_host_api* host = nullptr;
};

strata_status create_impl(const char*, const strata_host_api* host, void** self, strata_error* err) {
  return compat::guard(err, [&] {
    auto p = std::make_unique<Fp32>();
    p->host = host;
    int rank = -1, size = -1;
    if (host != nullptr && host->comm != nullptr) {
      strata_comm_caps caps;
      std::memset(&caps, 0, sizeof caps);
      caps.struct_size = sizeof caps;
      strata_error e;
      std::memset(&e, 0, sizeof e);
      e.struct_size = sizeof e;
      if (host->comm->query(host->comm_self, &caps, &e) != STRATA_OK) {
        compat::fail(STRATA_ERR_COMM, std::string("comm query through the host table: ") + e.message);
      }
      rank = caps.rank;
      size = caps.size;
    }
    compat::log(host, STRATA_LOG_INFO, "compat_fp32: built with ABI %s, host ABI %u.%u, rank %d of %d",
                compat::built_with(), host != nullptr ? host->abi_major : 0u,
                host != nullptr ? COMPAT_RUNTIME_MINOR(host) : 0u, rank, size);
    *self = p.release();
  });
}
COMPAT_CREATE(create_impl)

void destroy(void* self) { delete static_cast<Fp32*>(self); }

strata_status query(void*, strata_precision_caps* caps, strata_error* err) {
  return compat::guard(err, [&] {
    if (STRATA_STRUCT_HAS(caps, strata_precision_caps, model_dtype)) caps->model_dtype = STRATA_F32;
    if (STRATA_STRUCT_HAS(caps, strata_precision_caps, dynamic_scaling)) caps->dynamic_scaling = 0;
  });
}

strata_status loss_scale(void*, double* scale, strata_error* err) {
  return compat::guard(err, [&] { *scale = 1.0; });
}

strata_status grad_stats(void*, const strata_shard* shards, size_t count, strata_grad_stats* stats,
                         strata_error* err) {
  return compat::guard(err, [&] {
    int32_t nonfinite = 0;
    double sum_sq = 0.0;
    for (size_t s = 0; s < count; ++s) {
      for (uint64_t i = 0; i < shards[s].count; ++i) {
        const float g = shards[s].grad[i];
        if (!std::isfinite(g)) nonfinite = 1;
        sum_sq += double(g) * double(g);
      }
    }
    if (STRATA_STRUCT_HAS(stats, strata_grad_stats, nonfinite)) stats->nonfinite = nonfinite;
    if (STRATA_STRUCT_HAS(stats, strata_grad_stats, sum_sq)) stats->sum_sq = sum_sq;
  });
}

strata_status update(void*, int32_t, strata_error* err) {
  return compat::guard(err, [] {});  // a fixed scale of 1: nothing to adjust
}

float load(const strata_buffer& b, uint64_t i) {
  switch (b.dtype) {
    case STRATA_F32: return static_cast<const float*>(b.data)[i];
    case STRATA_F16: return strata::f16_to_float(static_cast<const uint16_t*>(b.data)[i]);
    default: return strata::bf16_to_float(static_cast<const uint16_t*>(b.data)[i]);
  }
}

void store(const strata_buffer& b, uint64_t i, float v) {
  switch (b.dtype) {
    case STRATA_F32: static_cast<float*>(b.data)[i] = v; break;
    case STRATA_F16: static_cast<uint16_t*>(b.data)[i] = strata::float_to_f16(v); break;
    default: static_cast<uint16_t*>(b.data)[i] = strata::float_to_bf16(v); break;
  }
}

bool castable(int32_t dtype) { return dtype == STRATA_F32 || dtype == STRATA_F16 || dtype == STRATA_BF16; }

strata_status cast(void*, const strata_buffer* src, const strata_buffer* dst, strata_error* err) {
  return compat::guard(err, [&] {
    if (src == nullptr || dst == nullptr) compat::fail(STRATA_ERR_INVALID_ARGUMENT, "cast: NULL buffer");
    if (src->count != dst->count) compat::fail(STRATA_ERR_INVALID_ARGUMENT, "cast: counts differ");
    if (!castable(src->dtype) || !castable(dst->dtype)) {
      compat::fail(STRATA_ERR_UNSUPPORTED, "cast: only f32, f16 and bf16");
    }
    if (src->device.type != STRATA_DEVICE_HOST || dst->device.type != STRATA_DEVICE_HOST) {
      compat::fail(STRATA_ERR_UNSUPPORTED, "cast: host memory only");
    }
    for (uint64_t i = 0; i < src->count; ++i) store(*dst, i, load(*src, i));
  });
}

const strata_precision_ops kOps = {COMPAT_OPS_HEADER(strata_precision_ops, STRATA_PLUGIN_PRECISION)
                                   create, destroy, query, loss_scale, grad_stats, update, cast
                                   COMPAT_PRECISION_CHECKPOINTS};

}  // namespace

COMPAT_ENTRY(kOps, STRATA_PLUGIN_PRECISION, "compat-fp32", "fp32, no loss scaling, built against one ABI header")
