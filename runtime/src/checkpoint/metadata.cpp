// metadata.json: parse_metadata checks every field a reader relies on, so that the readers after
// it (ShardReader, the tool, the engine's load) can index params, ranks and slots without checks.
#include "checkpoint/format.hpp"
#include "checkpoint/io_detail.hpp"

#include <cstdio>
#include <limits>
#include <set>

namespace strata::ckpt {

using nlohmann::json;

std::string shard_file_name(int rank) {
  char name[32];
  std::snprintf(name, sizeof name, "rank%05d.shard", rank);
  return name;
}

uint64_t data_bytes(const std::vector<Range>& ranges, size_t slots) {
  uint64_t total = 0;
  for (const Range& r : ranges) total += r.count * 4 * slots;
  return total;
}

namespace {

// Reads fields of one JSON document, naming `path` and the key's JSON path in every error.
class Checker {
 public:
  explicit Checker(const std::string& path) : path_(path) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    detail::bad_file(path_, where + ": " + what);
  }
  const json& member(const json& object, const std::string& where, const char* key) const {
    const auto it = object.find(key);
    if (it == object.end()) fail(where.empty() ? key : where + "." + key, "missing");
    return *it;
  }
  uint64_t unsigned_value(const json& v, const std::string& where) const {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) {
      fail(where, "expected a non-negative integer, got " + describe(v));
    }
    return v.get<uint64_t>();
  }
  std::string string_value(const json& v, const std::string& where) const {
    if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
      fail(where, "expected a non-empty string, got " + describe(v));
    }
    return v.get<std::string>();
  }
  const json& array_value(const json& v, const std::string& where) const {
    if (!v.is_array()) fail(where, "expected a list, got " + describe(v));
    return v;
  }
  const json& object_value(const json& v, const std::string& where) const {
    if (!v.is_object()) fail(where, "expected an object, got " + describe(v));
    return v;
  }

 private:
  static std::string describe(const json& v) {
    const std::string text = v.dump();
    return std::string(v.type_name()) + " " + (text.size() > 40 ? text.substr(0, 40) + "..." : text);
  }
  const std::string& path_;
};

std::string at(const std::string& list, size_t i) { return list + "[" + std::to_string(i) + "]"; }

std::vector<std::string> parse_slots(const Checker& c, const json& doc) {
  const json& list = c.array_value(c.member(doc, "", "slots"), "slots");
  std::vector<std::string> slots;
  std::set<std::string> seen;
  for (size_t i = 0; i < list.size(); ++i) {
    std::string name = c.string_value(list[i], at("slots", i));
    if (!seen.insert(name).second) c.fail(at("slots", i), "slot '" + name + "' listed twice");
    slots.push_back(std::move(name));
  }
  if (slots.empty() || slots[0] != kMasterSlot) {
    c.fail("slots", std::string("expected a list starting with \"") + kMasterSlot + "\"");
  }
  return slots;
}

std::vector<ParamInfo> parse_params(const Checker& c, const json& doc) {
  const json& list = c.array_value(c.member(doc, "", "params"), "params");
  std::vector<ParamInfo> params;
  std::set<std::string> seen;
  if (list.size() > std::numeric_limits<uint32_t>::max()) c.fail("params", "too many parameters");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = at("params", i);
    const json& p = c.object_value(list[i], where);
    ParamInfo info;
    info.name = c.string_value(c.member(p, where, "name"), where + ".name");
    info.count = c.unsigned_value(c.member(p, where, "count"), where + ".count");
    info.dtype = c.string_value(c.member(p, where, "dtype"), where + ".dtype");
    if (info.dtype != "f32" && info.dtype != "f16" && info.dtype != "bf16") {
      c.fail(where + ".dtype", "expected \"f32\", \"f16\" or \"bf16\", got \"" + info.dtype + "\"");
    }
    // The shape is redundant with count ([count]); when present it must agree.
    if (const auto shape = p.find("shape"); shape != p.end()) {
      if (!shape->is_array() || shape->size() != 1 || !(*shape)[0].is_number_unsigned() ||
          (*shape)[0].get<uint64_t>() != info.count) {
        c.fail(where + ".shape", "expected [" + std::to_string(info.count) + "] (the count)");
      }
    }
    if (!seen.insert(info.name).second) {
      c.fail(where + ".name", "parameter '" + info.name + "' listed twice");
    }
    params.push_back(std::move(info));
  }
  return params;
}

Range parse_range(const Checker& c, const json& v, const std::string& where,
                  const std::vector<ParamInfo>& params) {
  if (!v.is_array() || v.size() != 3) c.fail(where, "expected [param, offset, count]");
  Range r;
  const uint64_t param = c.unsigned_value(v[0], where + "[0]");
  if (param >= params.size()) {
    c.fail(where, "parameter " + std::to_string(param) + " does not exist (" +
                      std::to_string(params.size()) + " parameters)");
  }
  r.param = static_cast<uint32_t>(param);
  r.offset = c.unsigned_value(v[1], where + "[1]");
  r.count = c.unsigned_value(v[2], where + "[2]");
  const auto end = detail::checked_add(r.offset, r.count);
  const ParamInfo& p = params[r.param];
  if (!end || *end > p.count) {
    c.fail(where, "elements [" + std::to_string(r.offset) + ", +" + std::to_string(r.count) +
                      ") lie outside " + p.name + " (" + std::to_string(p.count) + " elements)");
  }
  return r;
}

std::vector<RankInfo> parse_ranks(const Checker& c, const json& doc,
                                  const std::vector<ParamInfo>& params, size_t slots) {
  const json& list = c.array_value(c.member(doc, "", "ranks"), "ranks");
  std::vector<RankInfo> ranks;
  std::set<std::string> files;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = at("ranks", i);
    const json& r = c.object_value(list[i], where);
    RankInfo info;
    info.file = c.string_value(c.member(r, where, "file"), where + ".file");
    // A plain name inside the tag folder: metadata must not point readers elsewhere.
    if (info.file.find('/') != std::string::npos || info.file == "." || info.file == "..") {
      c.fail(where + ".file", "expected a file name inside the tag folder, got \"" + info.file + "\"");
    }
    if (!files.insert(info.file).second) c.fail(where + ".file", "'" + info.file + "' listed twice");
    info.data_bytes = c.unsigned_value(c.member(r, where, "data_bytes"), where + ".data_bytes");
    const json& ranges = c.array_value(c.member(r, where, "ranges"), where + ".ranges");
    uint64_t expected = 0;
    bool overflow = false;
    for (size_t j = 0; j < ranges.size(); ++j) {
      info.ranges.push_back(parse_range(c, ranges[j], at(where + ".ranges", j), params));
      const auto bytes = detail::checked_mul(info.ranges.back().count, 4 * slots);
      const auto sum = bytes ? detail::checked_add(expected, *bytes) : std::nullopt;
      overflow = overflow || !sum;
      if (sum) expected = *sum;
    }
    if (overflow || expected != info.data_bytes) {
      c.fail(where + ".data_bytes",
             std::to_string(info.data_bytes) + " does not match its ranges (" +
                 (overflow ? std::string("overflow") : std::to_string(expected)) + " bytes for " +
                 std::to_string(slots) + " slots)");
    }
    ranks.push_back(std::move(info));
  }
  return ranks;
}

}  // namespace

Metadata parse_metadata(std::string_view text, const std::string& path) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) detail::bad_file(path, "not valid JSON");
  if (!doc.is_object()) detail::bad_file(path, "expected a JSON object");
  const Checker c(path);
  Metadata meta;
  const auto format = doc.find("format");
  if (format == doc.end() || *format != "strata-checkpoint") {
    c.fail("format", "expected \"strata-checkpoint\": not a Strata checkpoint's metadata");
  }
  const uint64_t version = c.unsigned_value(c.member(doc, "", "format_version"), "format_version");
  if (version > static_cast<uint64_t>(kFormatVersion)) {
    detail::bad_file(path, "format_version " + std::to_string(version) + " is newer than this reader (" +
                               std::to_string(kFormatVersion) + "): written by a newer Strata");
  }
  if (version == 0) c.fail("format_version", "expected at least 1, got 0");
  meta.format_version = static_cast<int>(version);
  const uint64_t world = c.unsigned_value(c.member(doc, "", "world_size"), "world_size");
  meta.slots = parse_slots(c, doc);
  meta.params = parse_params(c, doc);
  meta.ranks = parse_ranks(c, doc, meta.params, meta.slots.size());
  if (world == 0 || world != meta.ranks.size()) {
    c.fail("world_size", std::to_string(world) + " does not match the " +
                             std::to_string(meta.ranks.size()) + " entries of ranks");
  }
  meta.world_size = static_cast<int>(world);
  meta.document = std::move(doc);
  return meta;
}

Metadata read_metadata(const std::string& tag_dir) {
  const std::string path = tag_dir + "/" + kMetadataFile;
  std::string text;
  if (!detail::read_whole_file(path, &text)) detail::bad_file(path, "missing: not a checkpoint tag folder");
  return parse_metadata(text, path);
}

std::string metadata_text(const Metadata& meta) {
  json doc = meta.document.is_object() ? meta.document : json::object();
  doc["format"] = "strata-checkpoint";
  doc["format_version"] = meta.format_version;
  doc["world_size"] = meta.world_size;
  doc["slots"] = meta.slots;
  json params = json::array();
  for (const ParamInfo& p : meta.params) {
    params.push_back({{"name", p.name}, {"shape", json::array({p.count})}, {"dtype", p.dtype}, {"count", p.count}});
  }
  doc["params"] = std::move(params);
  json ranks = json::array();
  for (const RankInfo& r : meta.ranks) {
    json ranges = json::array();
    for (const Range& range : r.ranges) ranges.push_back(json::array({range.param, range.offset, range.count}));
    ranks.push_back({{"file", r.file}, {"data_bytes", r.data_bytes}, {"ranges", std::move(ranges)}});
  }
  doc["ranks"] = std::move(ranks);
  return doc.dump(2) + "\n";
}

}  // namespace strata::ckpt
