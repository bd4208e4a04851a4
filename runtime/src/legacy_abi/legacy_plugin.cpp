// The 1.0-1.2 plugin adapter's entry points (see legacy_plugin.hpp): the table checks and create.
// The forwarding tables are in adapted_tables.cpp, the tables lent to legacy plugins in
// lent_tables.cpp.
#include "legacy_plugin.hpp"

#include "adapter_support.hpp"
#include "error.hpp"
#include "lent_tables.hpp"
#include "names.hpp"

#include <memory>

namespace strata::rt::legacy {
namespace {

// ---- table checks ------------------------------------------------------------------------------

struct Fn {
  const char* name;
  size_t offset;
};

// The function pointer at `offset` of a legacy table, whatever its kind.
const void* pointer_at(const void* table, size_t offset) {
  const void* fn = nullptr;
  std::memcpy(&fn, static_cast<const char*>(table) + offset, sizeof(fn));
  return fn;
}

#define STRATA_LEGACY_FN(table, name) Fn{#name, offsetof(table, name)}

size_t size_1_0(int32_t kind) {
  switch (kind) {
    case STRATA_PLUGIN_COMM: return kCommSize1_0;
    case STRATA_PLUGIN_SHARDING: return kShardingSize1_0;
    case STRATA_PLUGIN_PRECISION: return kPrecisionSize1_0;
    case STRATA_PLUGIN_OFFLOAD: return kOffloadSize1_0;
    default: return 0;
  }
}

std::vector<Fn> required_1_0(int32_t kind) {
  using comm_ops = v1_2::strata_comm_ops;
  using sharding_ops = v1_2::strata_sharding_ops;
  using precision_ops = v1_2::strata_precision_ops;
  using offload_ops = v1_2::strata_offload_ops;
  switch (kind) {
    case STRATA_PLUGIN_COMM:
      // allgatherv, reduce_scatter and test are optional as today; wait depends on the caps.
      return {STRATA_LEGACY_FN(comm_ops, create), STRATA_LEGACY_FN(comm_ops, destroy),
              STRATA_LEGACY_FN(comm_ops, query), STRATA_LEGACY_FN(comm_ops, allreduce),
              STRATA_LEGACY_FN(comm_ops, allgather), STRATA_LEGACY_FN(comm_ops, broadcast),
              STRATA_LEGACY_FN(comm_ops, barrier)};
    case STRATA_PLUGIN_SHARDING:
      return {STRATA_LEGACY_FN(sharding_ops, create), STRATA_LEGACY_FN(sharding_ops, destroy),
              STRATA_LEGACY_FN(sharding_ops, query), STRATA_LEGACY_FN(sharding_ops, register_param),
              STRATA_LEGACY_FN(sharding_ops, finalize), STRATA_LEGACY_FN(sharding_ops, grad_ready),
              STRATA_LEGACY_FN(sharding_ops, finish_reduce), STRATA_LEGACY_FN(sharding_ops, owned_shards),
              STRATA_LEGACY_FN(sharding_ops, publish), STRATA_LEGACY_FN(sharding_ops, zero_grad)};
    case STRATA_PLUGIN_PRECISION:
      return {STRATA_LEGACY_FN(precision_ops, create), STRATA_LEGACY_FN(precision_ops, destroy),
              STRATA_LEGACY_FN(precision_ops, query), STRATA_LEGACY_FN(precision_ops, loss_scale),
              STRATA_LEGACY_FN(precision_ops, grad_stats), STRATA_LEGACY_FN(precision_ops, update),
              STRATA_LEGACY_FN(precision_ops, cast)};
    case STRATA_PLUGIN_OFFLOAD:
      return {STRATA_LEGACY_FN(offload_ops, create), STRATA_LEGACY_FN(offload_ops, destroy),
              STRATA_LEGACY_FN(offload_ops, query), STRATA_LEGACY_FN(offload_ops, init_state),
              STRATA_LEGACY_FN(offload_ops, step)};
    default: return {};
  }
}

const std::vector<Fn>& group_fns() {
  using sharding_ops = v1_2::strata_sharding_ops;
  static const std::vector<Fn> fns = {
      STRATA_LEGACY_FN(sharding_ops, define_group), STRATA_LEGACY_FN(sharding_ops, gather),
      STRATA_LEGACY_FN(sharding_ops, release), STRATA_LEGACY_FN(sharding_ops, param_view),
      STRATA_LEGACY_FN(sharding_ops, end_micro_step)};
  return fns;
}

#undef STRATA_LEGACY_FN


}  // namespace

bool is_legacy(const strata_plugin_descriptor& d) {
  return d.min_runtime_minor < STRATA_ABI_MINOR_TABLES;
}

void check_table(const strata_plugin_descriptor& d, int32_t kind, const std::string& at) {
  const std::string what = plugin_kind_name(kind) + " ops table of ABI 1." +
                           std::to_string(d.min_runtime_minor) +
                           " (the layout before strata_ops_header)";
  if (!is_legacy(d)) {
    throw Error(STRATA_ERR_ABI, at + ": plugin ABI 1." + std::to_string(d.min_runtime_minor) +
                                    " is not a 1.0-1.2 plugin; its tables are checked as today's");
  }
  if (d.kind != kind) {
    throw Error(STRATA_ERR_ABI, at + ": plugin is of kind " + plugin_kind_name(d.kind) + ", expected " +
                                    plugin_kind_name(kind));
  }
  if (d.ops == nullptr) throw Error(STRATA_ERR_ABI, at + ": plugin descriptor has no ops table");
  const size_t size = table_size(d);
  const size_t floor = size_1_0(kind);
  if (floor == 0) throw Error(STRATA_ERR_ABI, at + ": " + what + ": unknown plugin kind");
  if (size < floor) {
    throw Error(STRATA_ERR_ABI, at + ": " + what + " struct_size " + std::to_string(size) +
                                    " is smaller than ABI 1.0's " + std::to_string(floor));
  }
  std::vector<std::string> missing;
  for (const Fn& fn : required_1_0(kind)) {
    if (pointer_at(d.ops, fn.offset) == nullptr) {
      missing.emplace_back(fn.name);
    }
  }
  if (!missing.empty()) {
    throw Error(STRATA_ERR_ABI, at + ": " + what + " has no " + joined(missing) +
                                    (missing.size() == 1 ? " (required)" : " (all required)"));
  }
  if (kind == STRATA_PLUGIN_SHARDING) {
    std::vector<std::string> present, absent;
    for (const Fn& fn : group_fns()) {
      const bool inside = has_field(size, fn.offset);
      const bool set = inside && pointer_at(d.ops, fn.offset) != nullptr;
      (set ? present : absent).emplace_back(fn.name);
    }
    if (!present.empty() && !absent.empty()) {
      throw Error(STRATA_ERR_ABI, at + ": " + what + " has " + joined(present) + " but no " +
                                      joined(absent) +
                                      " (the ABI 1.1 parameter-group functions are all five or none)");
    }
  }
}

strata_status create(const strata_plugin_descriptor& d, const strata_plugin_create_args* args,
                     void** self, strata_error* err) {
  if (self != nullptr) *self = nullptr;
  std::unique_ptr<Instance> in;
  const char* config = "{}";
  const strata_status prepared = guard(err, [&]() -> strata_status {
    if (self == nullptr) fail(STRATA_ERR_INVALID_ARGUMENT, "create: self is NULL");
    if (args == nullptr || !STRATA_STRUCT_HAS(args, strata_plugin_create_args, host)) {
      fail(STRATA_ERR_INVALID_ARGUMENT, "create: args is NULL or too small to hold config_json and host");
    }
    if (!is_legacy(d) || d.ops == nullptr || lifecycle(d.kind, d.ops).create == nullptr) {
      fail(STRATA_ERR_ABI, "legacy create: plugin '" + std::string(d.name != nullptr ? d.name : "?") +
                               "' is not a 1.0-1.2 plugin with an ops table");
    }
    if (args->config_json != nullptr) config = args->config_json;
    in = std::make_unique<Instance>();
    in->kind = d.kind;
    in->minor = d.min_runtime_minor;
    in->ops = d.ops;
    in->ops_size = table_size(d);

    // Today's host table cut to 1.2: the same layout (1.2's runtime_minor is called abi_minor),
    // which only grew at the end. Its comm and precision become 1.2-layout tables lent here.
    const strata_host_api* host = args->host;
    if (host != nullptr) {
      const size_t n = std::min(host->struct_size, kHostSize1_2);
      std::memcpy(&in->host, host, n);
      in->host.struct_size = n;
      in->host.abi_minor = std::min(host->runtime_minor, v1_2::kHostMinor);
      const bool has_comm = STRATA_STRUCT_HAS(&in->host, v1_2::strata_host_api, comm_self);
      if (has_comm && host->comm != nullptr) {
        in->comm_link = Link{host->comm, host->comm_self, d.min_runtime_minor};
        in->host_comm = lent_comm_table(*host->comm);
        in->host.comm = &in->host_comm;
        in->host.comm_self = &in->comm_link;
      }
      const bool has_precision = STRATA_STRUCT_HAS(&in->host, v1_2::strata_host_api, precision_self);
      if (has_precision && host->precision != nullptr) {
        in->precision_link = Link{host->precision, host->precision_self, d.min_runtime_minor};
        in->host_precision = lent_precision_table();
        in->host.precision = &in->host_precision;
        in->host.precision_self = &in->precision_link;
      }
    }
    return STRATA_OK;
  });
  if (prepared != STRATA_OK) return prepared;

  const v1_2::strata_host_api* legacy_host = args->host != nullptr ? &in->host : nullptr;
  void* legacy_self = nullptr;
  const strata_status status =
      call(lifecycle(d.kind, d.ops).create, config, legacy_host, &legacy_self, err);
  if (status != STRATA_OK) return status;  // nothing to destroy: a failed create owns nothing
  in->self = legacy_self;
  *self = in.release();
  return STRATA_OK;
}

}  // namespace strata::rt::legacy
