#include "loader/descriptor_rules.hpp"

#include <cstddef>
#include <string_view>
#include <type_traits>

#include "error.hpp"
#include "legacy_abi/legacy_plugin.hpp"
#include "names.hpp"

namespace strata::rt::rules {
namespace {

std::string version(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

// "a sharding plugin", "an offload table".
std::string a_kind(int32_t kind, const char* noun) {
  const std::string name = plugin_kind_name(kind);
  const bool vowel = std::string_view("aeiou").find(name.front()) != std::string_view::npos;
  return (vowel ? "an " : "a ") + name + " " + noun;
}

// Sizes of the ABI 1.3 ops tables (the first with strata_ops_header), up to and including their
// last 1.3 member: the least a table with a header may be.
size_t ops_size_1_3(int32_t kind) {
  switch (kind) {
    case STRATA_PLUGIN_COMM: return STRATA_COMM_OPS_SIZE_1_3;
    case STRATA_PLUGIN_SHARDING: return STRATA_SHARDING_OPS_SIZE_1_3;
    case STRATA_PLUGIN_PRECISION: return STRATA_PRECISION_OPS_SIZE_1_3;
    case STRATA_PLUGIN_OFFLOAD: return STRATA_OFFLOAD_OPS_SIZE_1_3;
    default: return 0;
  }
}

bool known_kind(int32_t kind) {
  return kind >= STRATA_PLUGIN_COMM && kind <= STRATA_PLUGIN_OFFLOAD;
}

// One function pointer of a table, by name; present only if it lies inside the table the plugin
// built (header.struct_size) and is not NULL.
struct Member {
  const char* name;
  bool present;
};

#define STRATA_MEMBER(field)                                                                    \
  Member {                                                                                      \
    #field, size >= offsetof(Ops, field) + sizeof(ops.field) && ops.field != nullptr            \
  }

template <class Ops>
struct Functions;

template <>
struct Functions<strata_comm_ops> {
  using Ops = strata_comm_ops;
  // wait is required only when caps.nonblocking is 1: the engine checks it after query.
  static std::vector<Member> required(const Ops& ops, size_t size) {
    return {STRATA_MEMBER(create), STRATA_MEMBER(destroy), STRATA_MEMBER(query),
            STRATA_MEMBER(allreduce), STRATA_MEMBER(allgather), STRATA_MEMBER(broadcast),
            STRATA_MEMBER(barrier)};
  }
  static std::vector<std::vector<Member>> whole_sets(const Ops&, size_t) { return {}; }
};

template <>
struct Functions<strata_sharding_ops> {
  using Ops = strata_sharding_ops;
  static std::vector<Member> required(const Ops& ops, size_t size) {
    return {STRATA_MEMBER(create),        STRATA_MEMBER(destroy),      STRATA_MEMBER(query),
            STRATA_MEMBER(register_param), STRATA_MEMBER(finalize),    STRATA_MEMBER(grad_ready),
            STRATA_MEMBER(finish_reduce), STRATA_MEMBER(owned_shards), STRATA_MEMBER(publish),
            STRATA_MEMBER(zero_grad)};
  }
  // Parameter groups: all five or none (refused otherwise).
  static std::vector<Member> groups(const Ops& ops, size_t size) {
    return {STRATA_MEMBER(define_group), STRATA_MEMBER(gather), STRATA_MEMBER(release),
            STRATA_MEMBER(param_view), STRATA_MEMBER(end_micro_step)};
  }
  static std::vector<std::vector<Member>> whole_sets(const Ops&, size_t) { return {}; }
};

template <>
struct Functions<strata_precision_ops> {
  using Ops = strata_precision_ops;
  static std::vector<Member> required(const Ops& ops, size_t size) {
    return {STRATA_MEMBER(create), STRATA_MEMBER(destroy),    STRATA_MEMBER(query),
            STRATA_MEMBER(loss_scale), STRATA_MEMBER(grad_stats), STRATA_MEMBER(update),
            STRATA_MEMBER(cast)};
  }
  static std::vector<std::vector<Member>> whole_sets(const Ops& ops, size_t size) {
    return {{STRATA_MEMBER(save_state), STRATA_MEMBER(load_state)}};
  }
};

template <>
struct Functions<strata_offload_ops> {
  using Ops = strata_offload_ops;
  static std::vector<Member> required(const Ops& ops, size_t size) {
    return {STRATA_MEMBER(create), STRATA_MEMBER(destroy), STRATA_MEMBER(query),
            STRATA_MEMBER(init_state), STRATA_MEMBER(step)};
  }
  static std::vector<std::vector<Member>> whole_sets(const Ops& ops, size_t size) {
    return {{STRATA_MEMBER(state_slots), STRATA_MEMBER(read_state), STRATA_MEMBER(write_state)},
            {STRATA_MEMBER(save_state), STRATA_MEMBER(load_state)}};
  }
};

#undef STRATA_MEMBER

// "has a, b but no c": the split of a set that must come whole, or "" when it is whole or absent.
std::string partial(const std::vector<Member>& set, const char* and_word) {
  std::vector<std::string> has, lacks;
  for (const Member& m : set) (m.present ? has : lacks).push_back(m.name);
  if (has.empty() || lacks.empty()) return "";
  return "has " + joined(has) + and_word + joined(lacks);
}

template <class Ops>
void read_functions(const void* table, Reading& r) {
  // Read as the instance will (copy_ops): a member past header.struct_size counts as NULL.
  const auto& ops = *static_cast<const Ops*>(table);
  const size_t size = static_cast<const strata_ops_header*>(table)->struct_size;
  std::string missing;  // every required function that is NULL, so an author fixes them at once
  for (const Member& m : Functions<Ops>::required(ops, size)) {
    if (!m.present) missing += (missing.empty() ? "'" : ", '") + std::string(m.name) + "'";
  }
  if (!missing.empty()) {
    r.refusal =
        Finding{Rule::functions, Subject::plugin, "ops table has no " + missing + " (required)"};
    return;
  }
  if constexpr (std::is_same_v<Ops, strata_sharding_ops>) {
    const std::string split = partial(Functions<Ops>::groups(ops, size), " but no ");
    if (!split.empty()) {
      r.refusal = Finding{Rule::functions, Subject::plugin,
                          "ops table " + split +
                              " (the parameter-group functions are optional as a set: all five "
                              "or none)"};
      return;
    }
  }
  r.passed.push_back(Rule::functions);
  for (const std::vector<Member>& set : Functions<Ops>::whole_sets(ops, size)) {
    const std::string split = partial(set, " but lacks ");
    if (!split.empty()) {
      r.advice.push_back({Rule::functions, Subject::plugin,
                          "these go together, all or none: " + split +
                              " (the runtime loads the plugin but treats the set as absent)"});
    }
  }
}

void read_table(const strata_plugin_descriptor& d, int32_t kind, Reading& r) {
  const auto& header = *static_cast<const strata_ops_header*>(d.ops);
  const size_t least = ops_size_1_3(kind);
  std::string problem;
  if (header.struct_size < least) {
    problem = "ops table header says " + std::to_string(header.struct_size) +
              " bytes, smaller than ABI 1.3's " + std::to_string(least) + " for " +
              a_kind(kind, "table");
  } else if (header.abi_major != STRATA_ABI_MAJOR) {
    problem = "ops table header says ABI major " + std::to_string(header.abi_major) +
              ", but the descriptor and this runtime say " + std::to_string(STRATA_ABI_MAJOR);
  } else if (header.kind != kind) {
    problem = "ops table header says it is " + a_kind(header.kind, "table") +
              ", but the descriptor says " + a_kind(kind, "table");
  } else if (header.built_minor < STRATA_ABI_MINOR_TABLES) {
    problem = "ops table header says ABI " + version(header.abi_major, header.built_minor) +
              ", older than 1." + std::to_string(STRATA_ABI_MINOR_TABLES) +
              ", the first whose tables have a header";
  }
  if (!problem.empty()) {
    r.refusal = Finding{Rule::ops_header, Subject::plugin, problem};
    return;
  }
  r.passed.push_back(Rule::ops_header);
  // A table built with a newer header is larger: only the fields this runtime knows are read; an
  // older one is smaller, and its missing members read as NULL.
  switch (kind) {
    case STRATA_PLUGIN_COMM: read_functions<strata_comm_ops>(d.ops, r); break;
    case STRATA_PLUGIN_SHARDING: read_functions<strata_sharding_ops>(d.ops, r); break;
    case STRATA_PLUGIN_PRECISION: read_functions<strata_precision_ops>(d.ops, r); break;
    case STRATA_PLUGIN_OFFLOAD: read_functions<strata_offload_ops>(d.ops, r); break;
  }
}

}  // namespace

const char* rule_name(Rule rule) {
  switch (rule) {
    case Rule::size: return "descriptor.size";
    case Rule::abi: return "descriptor.abi";
    case Rule::names: return "descriptor.names";
    case Rule::kind: return "descriptor.kind";
    case Rule::ops_header: return "descriptor.ops_header";
    case Rule::functions: return "descriptor.functions";
  }
  return "descriptor";
}

std::string joined_to(const std::string& subject, Subject kind, const std::string& sentence) {
  return subject + (kind == Subject::plugin_predicate ? " " : ": ") + sentence;
}

std::string plugin_subject(int32_t kind, const char* name, const std::string& file) {
  return plugin_kind_name(kind) + " plugin '" + name + "' (" + file + ")";
}

Reading read_descriptor(const strata_plugin_descriptor* d, std::optional<int32_t> expected_kind,
                        uint32_t runtime_minor, const std::string& runtime_abi) {
  Reading r;
  auto refuse = [&](Rule rule, Subject subject, std::string sentence) {
    r.refusal = Finding{rule, subject, std::move(sentence)};
    return r;
  };
  if (d == nullptr) {
    return refuse(Rule::size, Subject::file, STRATA_PLUGIN_ENTRY_SYMBOL " returned NULL");
  }
  // The version fields come first and are read before anything else: a plugin of another major
  // version may lay out everything after them differently.
  if (d->struct_size < offsetof(strata_plugin_descriptor, kind)) {
    return refuse(Rule::size, Subject::file,
                  "plugin descriptor struct_size " + std::to_string(d->struct_size) +
                      " is too small to hold an ABI version");
  }
  const std::string plugin_abi = version(d->abi_major, d->min_runtime_minor);
  if (d->abi_major != STRATA_ABI_MAJOR) {
    r.passed.push_back(Rule::size);
    return refuse(Rule::abi, Subject::file,
                  "plugin ABI " + plugin_abi + " is not compatible with this runtime's ABI " +
                      runtime_abi + " (major must match)");
  }
  if (d->struct_size < STRATA_PLUGIN_DESCRIPTOR_SIZE_1_0) {
    return refuse(Rule::size, Subject::file,
                  "plugin descriptor struct_size " + std::to_string(d->struct_size) +
                      " is smaller than ABI 1.0's " +
                      std::to_string(STRATA_PLUGIN_DESCRIPTOR_SIZE_1_0));
  }
  r.passed.push_back(Rule::size);
  if (d->name == nullptr || d->version == nullptr) {
    // Before the floor, which the loader names the plugin in: descriptor.abi is not known passed.
    return refuse(Rule::names, Subject::file, "plugin descriptor has no name or version string");
  }
  // The descriptor's minor is the lowest runtime minor the plugin needs (its floor).
  if (d->min_runtime_minor > runtime_minor) {
    return refuse(Rule::abi, Subject::plugin_predicate,
                  "needs runtime ABI " + plugin_abi + " or later; this runtime is " + runtime_abi);
  }
  r.passed.push_back(Rule::abi);
  r.passed.push_back(Rule::names);
  if (expected_kind ? d->kind != *expected_kind : !known_kind(d->kind)) {
    return refuse(Rule::kind, Subject::file,
                  expected_kind ? "plugin '" + std::string(d->name) + "' is " +
                                      a_kind(d->kind, "plugin") + ", but this stratum needs " +
                                      a_kind(*expected_kind, "plugin")
                                : "plugin '" + std::string(d->name) + "' has kind " +
                                      std::to_string(d->kind) +
                                      ", expected comm (1), sharding (2), precision (3) or "
                                      "offload (4)");
  }
  r.passed.push_back(Rule::kind);
  if (d->ops == nullptr) {
    return refuse(Rule::ops_header, Subject::file, "plugin descriptor has no ops table");
  }
  if (*d->name == '\0') {
    r.advice.push_back({Rule::names, Subject::plugin, "the name is empty: logs and errors "
                                                      "cannot say which plugin they mean"});
  }
  if (d->description == nullptr) {
    r.advice.push_back({Rule::names, Subject::plugin, "description is NULL: the runtime logs "
                                                      "none for this plugin"});
  }
  if (d->min_runtime_minor < STRATA_ABI_MINOR_TABLES) {
    // Built with a 1.0-1.2 header: a table without strata_ops_header, loaded through the adapter.
    r.legacy = true;
    try {
      legacy::check_table(*d, d->kind, "");
    } catch (const Error& e) {
      std::string sentence = e.what();
      if (sentence.rfind(": ", 0) == 0) sentence.erase(0, 2);  // check_table's empty `at`
      r.advice.clear();  // refused: advice is for a plugin the runtime loads
      return refuse(Rule::functions, Subject::file, sentence);
    }
    r.passed.push_back(Rule::ops_header);
    r.passed.push_back(Rule::functions);
    return r;
  }
  read_table(*d, d->kind, r);
  if (r.refusal) r.advice.clear();
  return r;
}

}  // namespace strata::rt::rules
