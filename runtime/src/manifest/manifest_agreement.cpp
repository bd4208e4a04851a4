#include "manifest/manifest_agreement.hpp"

#include "error.hpp"
#include "manifest/manifest_detail.hpp"
#include "loader/sha256.hpp"
#include "faults/stall_report.hpp"

#include <algorithm>
#include <map>
#include <optional>

namespace strata::rt {
namespace {

using nlohmann::json;

constexpr char kKeyEnd = '\x1f';
constexpr char kEntryEnd = '\x1e';
const std::vector<std::string> kStrata{"comm", "sharding", "precision", "offload"};

// The last path component, without an array index.
std::string leaf(const std::string& key) {
  const size_t dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

void flatten(const json& value, const std::string& key, AgreementEntries& out) {
  if (value.is_object() && (!value.empty() || key.empty())) {
    for (const auto& [name, child] : value.items()) {
      flatten(child, key.empty() ? name : key + "." + name, out);
    }
  } else if (value.is_array() && !value.empty()) {
    for (size_t i = 0; i < value.size(); ++i) flatten(value[i], key + "[" + std::to_string(i) + "]", out);
  } else if (!may_differ_per_rank(key)) {
    out.emplace_back(key, value.dump());
  }
}

bool is_plugin_key(const std::string& key) {
  for (const std::string& s : kStrata) {
    if (key == s + ".library" || key == s + ".sha256") return true;
  }
  return false;
}

// A value as shown in a message: short, so one odd value cannot flood it.
std::string shown(const std::optional<std::string>& value) {
  return value ? manifest_detail::shortened(*value) : "(not set)";
}

}  // namespace

bool may_differ_per_rank(const std::string& key) {
  // Each rank's own scratch folder for offloaded state (often a node-local drive).
  return leaf(key) == "nvme_path";
}

AgreementEntries agreement_entries(const json& manifest, const std::vector<PluginIdentity>& plugins) {
  AgreementEntries entries;
  flatten(manifest, "", entries);
  // A plugin agrees by what it is, not by how each rank's manifest spells its path.
  std::erase_if(entries, [](const auto& e) { return is_plugin_key(e.first); });
  for (const PluginIdentity& p : plugins) {
    entries.emplace_back(p.stratum + ".library",
                         json(p.name + " " + p.version + ", sha256 " + p.sha256.substr(0, 12)).dump());
  }
  std::sort(entries.begin(), entries.end());
  return entries;
}

std::string encode_entries(const AgreementEntries& entries) {
  std::string text;
  for (const auto& [key, value] : entries) text += key + kKeyEnd + value + kEntryEnd;
  return text;
}

AgreementEntries decode_entries(const std::string& text) {
  AgreementEntries entries;
  size_t at = 0;
  while (at < text.size()) {
    const size_t key_end = text.find(kKeyEnd, at);
    const size_t entry_end = text.find(kEntryEnd, at);
    if (key_end == std::string::npos || entry_end == std::string::npos || key_end > entry_end) break;
    entries.emplace_back(text.substr(at, key_end - at), text.substr(key_end + 1, entry_end - key_end - 1));
    at = entry_end + 1;
  }
  return entries;
}

std::string first_difference(const std::vector<AgreementEntries>& per_rank) {
  // key -> each rank's value (absent where a rank does not set it); std::map keeps keys sorted,
  // so every rank names the same first difference.
  std::map<std::string, std::vector<std::optional<std::string>>> table;
  for (size_t rank = 0; rank < per_rank.size(); ++rank) {
    for (const auto& [key, value] : per_rank[rank]) {
      auto& values = table.try_emplace(key, per_rank.size()).first->second;
      values[rank] = value;
    }
  }
  for (const auto& [key, values] : table) {
    // Named references, not the structured binding, in the lambdas below: capturing a structured
    // binding is C++20 (clang accepts it from 16 only).
    const auto& by_rank = values;
    if (std::all_of(by_rank.begin(), by_rank.end(),
                    [&](const auto& v) { return v == by_rank.front(); })) {
      continue;
    }
    // Group the ranks by value, in order of each value's lowest rank.
    std::vector<std::pair<std::optional<std::string>, std::vector<int>>> groups;
    for (size_t rank = 0; rank < by_rank.size(); ++rank) {
      const auto& value = by_rank[rank];
      auto it = std::find_if(groups.begin(), groups.end(),
                             [&](const auto& g) { return g.first == value; });
      if (it == groups.end()) it = groups.insert(groups.end(), {value, {}});
      it->second.push_back(static_cast<int>(rank));
    }
    std::string text = key + ": ";
    for (size_t g = 0; g < groups.size(); ++g) {
      const bool one = groups[g].second.size() == 1;
      text += (g > 0 ? ", " : "") + rank_list(groups[g].second) + (one ? " has " : " have ") +
              shown(groups[g].first);
    }
    return text;
  }
  return {};
}

void agree_across_ranks(const Collectives& collectives, const std::string& manifest_source,
                        const AgreementEntries& mine) {
  const std::string text = encode_entries(mine);
  // Compare digests first: the whole texts travel only when something differs.
  const std::vector<std::string> digests = collectives.allgather_strings(sha256_hex(text));
  if (std::all_of(digests.begin(), digests.end(), [&](const auto& d) { return d == digests.front(); })) {
    return;
  }
  std::vector<AgreementEntries> per_rank;
  for (const std::string& theirs : collectives.allgather_strings(text)) {
    per_rank.push_back(decode_entries(theirs));
  }
  std::string difference = first_difference(per_rank);
  if (difference.empty()) difference = "the fingerprints differ, but no key does (a different build?)";
  throw Error(STRATA_ERR_MISMATCH,
              manifest_source + ": the ranks' manifests differ, so every rank stops: " + difference +
                  " (keys that may differ per rank are listed in the README)");
}

}  // namespace strata::rt
