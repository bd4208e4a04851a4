// The rules a plugin's descriptor and ops table must meet to load: one set, read by the runtime's
// loader (plugin_loader.cpp, which refuses the plugin with the sentence) and by strata-plugin-check
// (which reports each rule as a check, so that it tells a plugin author what the runtime would do).
//
// Rules, in the order they are read (each relies on the ones before it):
//   descriptor.size       struct_size holds the ABI version, then at least ABI 1.0's descriptor
//   descriptor.abi        major equals STRATA_ABI_MAJOR; the floor (min_runtime_minor) is at most
//                         the runtime's minor; a floor below 1.3 is a 1.0-1.2 plugin, which loads
//                         through the runtime's adapter (runtime/src/legacy_abi)
//   descriptor.names      name and version are set
//   descriptor.kind       the kind the stratum needs (or, with no stratum, one of the four)
//   descriptor.ops_header ops is set; a 1.3+ table's header: at least 1.3's size for the kind,
//                         major 1, the descriptor's kind, built_minor >= 3
//   descriptor.functions  every Required function is set; the sharding group functions are all set
//                         or all NULL (1.0-1.2 tables: the adapter's own check)
// and advice, which the runtime does not refuse but an author should hear: an empty name, no
// description, and the optional sets of the precision and offload tables that only work whole.
// Thread-safe; reads the descriptor and table only.
#pragma once

#include <strata/plugin_api.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace strata::rt::rules {

enum class Rule { size, abi, names, kind, ops_header, functions };

// "descriptor.size", "descriptor.abi", ...: the checker's names for them.
const char* rule_name(Rule rule);

// What a sentence is about, for the prefix a reader puts before it: the library file (before the
// plugin's name is known to be readable) or the plugin ("<kind> plugin '<name>' (<file>)"), after
// a colon, or the plugin as the subject of the sentence itself ("... (<file>) needs runtime ...").
enum class Subject { file, plugin, plugin_predicate };

// The finding as one sentence after `subject` (the file's name or plugin_subject()).
std::string joined_to(const std::string& subject, Subject kind, const std::string& sentence);

struct Finding {
  Rule rule;
  Subject subject;
  std::string sentence;
};

struct Reading {
  std::optional<Finding> refusal;  // the first rule broken: the runtime refuses the plugin
  std::vector<Finding> advice;     // loadable, but incomplete (see above); empty when refused
  bool legacy = false;             // a 1.0-1.2 plugin: the runtime loads it through its adapter
  std::vector<Rule> passed;        // the rules met, in order, up to the refusal if any
};

// Reads descriptor `d` (NULL is refused). `expected_kind`: the stratum's kind, or nullopt for any
// of the four. `runtime_minor` and `runtime_abi` ("1.9", or with the emulation note) are the
// runtime's ABI as the loader reports it.
Reading read_descriptor(const strata_plugin_descriptor* d, std::optional<int32_t> expected_kind,
                        uint32_t runtime_minor, const std::string& runtime_abi);

// "<kind> plugin '<name>' (<file>)", the plugin subject's prefix ("a sharding plugin" wording as
// the loader writes it).
std::string plugin_subject(int32_t kind, const char* name, const std::string& file);

}  // namespace strata::rt::rules
