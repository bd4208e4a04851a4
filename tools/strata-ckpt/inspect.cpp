// inspect: the metadata's summary and each rank file's actual size, as text or JSON. It reads no
// shard data (verify does).
#include "tool.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <iostream>

namespace strata::ckpt::tool {

using nlohmann::json;

namespace {

json summary(const std::string& tag_dir, const Metadata& meta) {
  const json& doc = meta.document;
  const auto optional = [&](const char* key) { return doc.contains(key) ? doc[key] : json(nullptr); };
  uint64_t elements = 0;
  for (const ParamInfo& p : meta.params) elements += p.count;
  json ranks = json::array();
  for (const RankInfo& r : meta.ranks) {
    struct stat st {};
    const bool present = ::stat((tag_dir + "/" + r.file).c_str(), &st) == 0;
    ranks.push_back({{"file", r.file}, {"ranges", r.ranges.size()}, {"data_bytes", r.data_bytes},
                     {"file_size", present ? json(static_cast<uint64_t>(st.st_size)) : json(nullptr)}});
  }
  return {{"tag_dir", tag_dir},
          {"format_version", meta.format_version},
          {"strata_version", optional("strata_version")},
          {"world_size", meta.world_size},
          {"stage", optional("stage")},
          {"model_dtype", optional("model_dtype")},
          {"optimizer", optional("optimizer")},
          {"counters", optional("counters")},
          {"slots", meta.slots},
          {"params", meta.params.size()},
          {"elements", elements},
          {"ranks", std::move(ranks)}};
}

// Strings bare, anything else (objects, numbers, null) as compact JSON.
std::string text(const json& v) { return v.is_string() ? v.get<std::string>() : v.is_null() ? "-" : v.dump(); }

}  // namespace

int inspect(const std::string& path, bool as_json) {
  const std::string tag_dir = resolve_tag_dir(path);
  const Metadata meta = read_metadata(tag_dir);
  const json s = summary(tag_dir, meta);
  if (as_json) {
    std::cout << s.dump(2) << "\n";
    return 0;
  }
  std::cout << "checkpoint      " << tag_dir << "\n"
            << "format version  " << meta.format_version << "\n"
            << "strata version  " << text(s["strata_version"]) << "\n"
            << "world size      " << meta.world_size << "\n"
            << "stage           " << text(s["stage"]) << "\n"
            << "model dtype     " << text(s["model_dtype"]) << "\n"
            << "optimizer       " << text(s["optimizer"]) << "\n";
  std::cout << "counters       ";
  if (s["counters"].is_object()) {
    for (const auto& [key, value] : s["counters"].items()) std::cout << " " << key << "=" << text(value);
  } else {
    std::cout << " " << text(s["counters"]);
  }
  std::cout << "\nslots          ";
  for (const std::string& slot : meta.slots) std::cout << " " << slot;
  std::cout << "\nparams          " << meta.params.size() << " (" << s["elements"].get<uint64_t>()
            << " elements)\n";
  std::cout << "rank  file                 ranges      data bytes       file size\n";
  for (size_t r = 0; r < meta.ranks.size(); ++r) {
    const json& rank = s["ranks"][r];
    char line[256];
    std::snprintf(line, sizeof line, "%-5zu %-20s %6zu %15llu %15s\n", r, meta.ranks[r].file.c_str(),
                  meta.ranks[r].ranges.size(), static_cast<unsigned long long>(meta.ranks[r].data_bytes),
                  rank["file_size"].is_null() ? "missing" : rank["file_size"].dump().c_str());
    std::cout << line;
  }
  return 0;
}

}  // namespace strata::ckpt::tool
