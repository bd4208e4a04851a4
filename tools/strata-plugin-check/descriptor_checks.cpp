#include "descriptor_checks.hpp"

#include <cstddef>
#include <initializer_list>
#include <type_traits>

namespace strata::plugin_check {
namespace {

// A plugin's table as it built it: the functions it has are those inside `size`.
template <class Ops>
struct Table {
  const Ops& ops;
  size_t size;
};

struct Named {
  const char* name;
  bool present;
};

// Required functions, then optional sets that must come whole ("all five or none").
Verdict functions_verdict(std::initializer_list<Named> required,
                          std::initializer_list<std::initializer_list<Named>> all_or_none) {
  std::string missing;
  for (const Named& f : required) {
    if (!f.present) missing += (missing.empty() ? "" : ", ") + std::string(f.name);
  }
  if (!missing.empty()) return Verdict::fail("required functions are NULL: " + missing);
  for (const auto& set : all_or_none) {
    std::string have, lack;
    for (const Named& f : set) (f.present ? have : lack) += std::string(" ") + f.name;
    if (!have.empty() && !lack.empty()) {
      return Verdict::fail("these go together, all or none: has" + have + " but lacks" + lack);
    }
  }
  return Verdict::pass();
}

// A function pointer counts only if it lies inside the table the plugin says it built.
#define FN(table, field)                                                                  \
  Named{#field, (table).size >= offsetof(std::remove_cvref_t<decltype((table).ops)>, field) + \
                                    sizeof((table).ops.field) &&                           \
                    (table).ops.field != nullptr}

Verdict comm_functions(const Table<strata_comm_ops>& t) {
  return functions_verdict({FN(t, create), FN(t, destroy), FN(t, query), FN(t, allreduce),
                            FN(t, allgather), FN(t, broadcast), FN(t, barrier)},
                           {});
}

Verdict sharding_functions(const Table<strata_sharding_ops>& t) {
  return functions_verdict(
      {FN(t, create), FN(t, destroy), FN(t, query), FN(t, register_param), FN(t, finalize),
       FN(t, grad_ready), FN(t, finish_reduce), FN(t, owned_shards), FN(t, publish),
       FN(t, zero_grad)},
      {{FN(t, define_group), FN(t, gather), FN(t, release), FN(t, param_view),
        FN(t, end_micro_step)}});
}

Verdict precision_functions(const Table<strata_precision_ops>& t) {
  return functions_verdict({FN(t, create), FN(t, destroy), FN(t, query), FN(t, loss_scale),
                            FN(t, grad_stats), FN(t, update), FN(t, cast)},
                           {{FN(t, save_state), FN(t, load_state)}});
}

Verdict offload_functions(const Table<strata_offload_ops>& t) {
  return functions_verdict({FN(t, create), FN(t, destroy), FN(t, query), FN(t, init_state),
                            FN(t, step)},
                           {{FN(t, state_slots), FN(t, read_state), FN(t, write_state)},
                            {FN(t, save_state), FN(t, load_state)}});
}

#undef FN

template <class Ops>
Table<Ops> table(const strata_plugin_descriptor& d) {
  const auto& ops = *static_cast<const Ops*>(d.ops);
  return {ops, ops.header.struct_size};
}

const char* stratum_of(int32_t kind) {
  switch (kind) {
    case STRATA_PLUGIN_COMM: return "comm";
    case STRATA_PLUGIN_SHARDING: return "sharding";
    case STRATA_PLUGIN_PRECISION: return "precision";
    case STRATA_PLUGIN_OFFLOAD: return "offload";
    default: return "";
  }
}

}  // namespace

DescriptorReport check_descriptor(const strata_plugin_descriptor& d) {
  DescriptorReport report;
  auto add = [&](const char* name, Verdict v) {
    const bool ok = v.outcome != Outcome::Fail;
    report.checks.emplace_back(name, std::move(v));
    return ok;
  };
  const std::string version = std::to_string(STRATA_ABI_MAJOR) + "." + std::to_string(STRATA_ABI_MINOR);
  if (d.struct_size < sizeof(strata_plugin_descriptor)) {
    add("descriptor.size", Verdict::fail("struct_size " + std::to_string(d.struct_size) +
                                         ", expected at least " +
                                         std::to_string(sizeof(strata_plugin_descriptor))));
    return report;
  }
  add("descriptor.size", Verdict::pass());
  if (d.abi_major != STRATA_ABI_MAJOR) {
    add("descriptor.abi", Verdict::fail("ABI major " + std::to_string(d.abi_major) +
                                        ", this Strata is " + version));
    return report;
  }
  if (d.min_runtime_minor < STRATA_ABI_MINOR_TABLES || d.min_runtime_minor > STRATA_ABI_MINOR) {
    add("descriptor.abi",
        Verdict::fail("ABI floor 1." + std::to_string(d.min_runtime_minor) + ": expected 1." +
                      std::to_string(STRATA_ABI_MINOR_TABLES) + " to " + version +
                      (d.min_runtime_minor < STRATA_ABI_MINOR_TABLES
                           ? " (tables of 1.0-1.2 plugins have no header; rebuild against this SDK)"
                           : " (the plugin needs a newer runtime than this one)")));
    return report;
  }
  add("descriptor.abi",
      Verdict::pass("floor 1." + std::to_string(d.min_runtime_minor) + ", runtime " + version));
  const char* stratum = stratum_of(d.kind);
  const bool named = d.name != nullptr && *d.name != '\0' && d.version != nullptr &&
                     d.description != nullptr;
  if (!add("descriptor.kind", *stratum != '\0' ? Verdict::pass(stratum)
                                                : Verdict::fail("kind " + std::to_string(d.kind) +
                                                                ", expected 1-4"))) {
    return report;
  }
  add("descriptor.names", named ? Verdict::pass(std::string(d.name) + " " + d.version)
                                : Verdict::fail("name, version or description is NULL or the "
                                                "name is empty"));
  if (d.ops == nullptr) {
    add("descriptor.ops_header", Verdict::fail("ops is NULL"));
    return report;
  }
  const auto& header = *static_cast<const strata_ops_header*>(d.ops);
  if (header.kind != d.kind || header.abi_major != STRATA_ABI_MAJOR ||
      header.built_minor < STRATA_ABI_MINOR_TABLES ||
      header.struct_size <= sizeof(strata_ops_header)) {
    add("descriptor.ops_header",
        Verdict::fail("header kind " + std::to_string(header.kind) + " (descriptor: " +
                      std::to_string(d.kind) + "), ABI " + std::to_string(header.abi_major) + "." +
                      std::to_string(header.built_minor) + ", struct_size " +
                      std::to_string(header.struct_size)));
    return report;
  }
  add("descriptor.ops_header", Verdict::pass());
  Verdict functions;
  switch (d.kind) {
    case STRATA_PLUGIN_COMM: functions = comm_functions(table<strata_comm_ops>(d)); break;
    case STRATA_PLUGIN_SHARDING: functions = sharding_functions(table<strata_sharding_ops>(d)); break;
    case STRATA_PLUGIN_PRECISION: functions = precision_functions(table<strata_precision_ops>(d)); break;
    default: functions = offload_functions(table<strata_offload_ops>(d)); break;
  }
  report.usable = add("descriptor.functions", std::move(functions)) && named;
  report.stratum = stratum;
  return report;
}

}  // namespace strata::plugin_check
