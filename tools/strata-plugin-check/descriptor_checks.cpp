#include "descriptor_checks.hpp"

#include <loader/descriptor_rules.hpp>

#include <string>

namespace strata::plugin_check {
namespace {

namespace rules = rt::rules;

const char* stratum_of(int32_t kind) {
  switch (kind) {
    case STRATA_PLUGIN_COMM: return "comm";
    case STRATA_PLUGIN_SHARDING: return "sharding";
    case STRATA_PLUGIN_PRECISION: return "precision";
    case STRATA_PLUGIN_OFFLOAD: return "offload";
    default: return "";
  }
}

// A passed rule's note: what the checker read.
// "1.9": the ABI of the runtime this checker was built with.
std::string runtime_abi() {
  return std::to_string(STRATA_ABI_MAJOR) + "." + std::to_string(STRATA_ABI_MINOR);
}

std::string note(rules::Rule rule, const strata_plugin_descriptor& d, bool legacy) {
  const std::string runtime = runtime_abi();
  switch (rule) {
    case rules::Rule::abi:
      return legacy ? "a 1.0-1.2 plugin (header 1." + std::to_string(d.min_runtime_minor) +
                          "): the runtime " + runtime + " loads it through its 1.0-1.2 adapter"
                    : "floor 1." + std::to_string(d.min_runtime_minor) + ", runtime " + runtime;
    case rules::Rule::names:
      return std::string(d.name) + " " + d.version;
    case rules::Rule::kind:
      return stratum_of(d.kind);
    default:
      return "";
  }
}

}  // namespace

DescriptorReport check_descriptor(const strata_plugin_descriptor& d) {
  // The runtime's own reading (runtime/src/loader/descriptor_rules.hpp), as a runtime of this
  // checker's ABI would load the plugin into any stratum of its kind.
  const rules::Reading reading =
      rules::read_descriptor(&d, std::nullopt, STRATA_ABI_MINOR, runtime_abi());
  DescriptorReport report;
  bool advised = false;
  for (rules::Rule rule : reading.passed) {
    std::string advice;
    for (const rules::Finding& f : reading.advice) {
      if (f.rule == rule) advice += (advice.empty() ? "" : "; ") + f.sentence;
    }
    advised = advised || !advice.empty();
    report.checks.emplace_back(rules::rule_name(rule),
                               advice.empty() ? Verdict::pass(note(rule, d, reading.legacy))
                                              : Verdict::fail(advice));
  }
  if (reading.refusal) {
    report.checks.emplace_back(rules::rule_name(reading.refusal->rule),
                               Verdict::fail("the runtime refuses to load it: " +
                                             reading.refusal->sentence));
    return report;
  }
  report.stratum = stratum_of(d.kind);
  if (reading.legacy) {
    // The stratum's checks drive a 1.3 table (with strata_ops_header); the runtime adapts a
    // 1.0-1.2 one when it loads it, which this checker does not.
    report.checks.emplace_back(
        "descriptor.behaviour",
        Verdict::skip("a 1.0-1.2 plugin: the runtime loads it through its adapter, but the "
                      "behaviour checks need a table of ABI 1.3 or later; rebuild it against this "
                      "SDK to run them"));
    return report;
  }
  report.usable = !advised;  // as before: an incomplete plugin is fixed before its behaviour
  return report;
}

}  // namespace strata::plugin_check
