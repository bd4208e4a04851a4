// Agreement at start-up: every rank fingerprints what must be the same on every rank (the
// manifest's keys after overrides, and each stratum's plugin by name, version and file hash), and
// ranks that differ all stop with an error naming the first differing key, its values and the
// ranks ("optimizer.params.lr: rank 0 has 0.001, rank 1 has 0.05"). Without it, different
// manifests hang in mismatched collectives or train different models without a word.
//
// Keys that may legitimately differ per rank are left out; the README lists them.
#pragma once

#include "engine/collectives.hpp"
#include "manifest/manifest.hpp"

#include <string>
#include <utility>
#include <vector>

namespace strata::rt {

// A stratum's plugin as it must agree across ranks.
struct PluginIdentity {
  std::string stratum;  // "comm", ...
  std::string name;
  std::string version;
  std::string sha256;   // of the library file
};

using AgreementEntries = std::vector<std::pair<std::string, std::string>>;  // key, JSON value

// The keys that must agree, sorted: "optimizer.params.lr" -> "0.001", "precision.library" ->
// "\"amp 0.1.0, sha256 0123456789ab\"", ...
AgreementEntries agreement_entries(const nlohmann::json& manifest,
                                   const std::vector<PluginIdentity>& plugins);

// Whether a key is left out because it may differ per rank (a local scratch path).
bool may_differ_per_rank(const std::string& key);

// The first key whose values differ, as a sentence; "" when every rank has the same entries.
std::string first_difference(const std::vector<AgreementEntries>& per_rank);

// Collective. Throws Error(STRATA_ERR_MISMATCH) on every rank alike when the ranks differ.
void agree_across_ranks(const Collectives& collectives, const std::string& manifest_source,
                        const AgreementEntries& mine);

std::string encode_entries(const AgreementEntries& entries);
AgreementEntries decode_entries(const std::string& text);

}  // namespace strata::rt
