// A shard file's index and trailer: written by ShardWriter::finish, checked by parse_shard_index
// against what the metadata says the rank holds, so a reader never trusts an offset it was not
// expecting.
#include "checkpoint/format.hpp"
#include "checkpoint/io_detail.hpp"

#include <xxhash.h>

#include <cstring>

namespace strata::ckpt {

using nlohmann::json;

std::string detail::shard_index_text(int rank, const std::vector<BlockEntry>& blocks) {
  json list = json::array();
  for (const BlockEntry& b : blocks) {
    list.push_back({{"range", b.range}, {"slot", b.slot}, {"offset", b.offset}, {"bytes", b.bytes},
                    {"xxh3", detail::hex64(b.xxh3)}});
  }
  return json{{"format_version", kFormatVersion}, {"rank", rank}, {"blocks", std::move(list)}}.dump();
}

namespace {

uint64_t index_field(const json& block, const char* key, size_t i, const std::string& path) {
  const auto it = block.find(key);
  if (it == block.end() || !it->is_number_unsigned()) {
    detail::bad_file(path, "index: blocks[" + std::to_string(i) + "]." + key +
                               ": expected a non-negative integer");
  }
  return it->get<uint64_t>();
}

// The blocks exactly as the metadata's ranges and slots lay them out (format.hpp): in data order,
// contiguous from the header on.
std::vector<BlockEntry> check_blocks(const json& list, const RankInfo& rank, size_t slots,
                                     const std::string& path) {
  const uint64_t expected_count = rank.ranges.size() * slots;
  if (list.size() != expected_count) {
    detail::bad_file(path, "index lists " + std::to_string(list.size()) + " blocks, expected " +
                               std::to_string(expected_count) + " (" + std::to_string(rank.ranges.size()) +
                               " ranges x " + std::to_string(slots) + " slots in metadata.json)");
  }
  std::vector<BlockEntry> blocks;
  blocks.reserve(list.size());
  uint64_t offset = kShardHeaderBytes;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& b = list[i];
    if (!b.is_object()) detail::bad_file(path, "index: blocks[" + std::to_string(i) + "]: expected an object");
    BlockEntry e;
    const uint64_t range = index_field(b, "range", i, path);
    const uint64_t slot = index_field(b, "slot", i, path);
    e.offset = index_field(b, "offset", i, path);
    e.bytes = index_field(b, "bytes", i, path);
    const auto hash = b.find("xxh3");
    const auto value = hash != b.end() && hash->is_string()
                           ? detail::parse_hex64(hash->get_ref<const std::string&>())
                           : std::nullopt;
    if (!value) detail::bad_file(path, "index: blocks[" + std::to_string(i) + "].xxh3: expected 16 hex digits");
    e.xxh3 = *value;
    const uint64_t want_bytes = rank.ranges[i / slots].count * 4;  // metadata checked no overflow
    if (range != i / slots || slot != i % slots || e.offset != offset || e.bytes != want_bytes) {
      detail::bad_file(path, "index: blocks[" + std::to_string(i) + "] is range " + std::to_string(range) +
                                 " slot " + std::to_string(slot) + " at " + std::to_string(e.offset) + " (" +
                                 std::to_string(e.bytes) + " bytes), expected range " +
                                 std::to_string(i / slots) + " slot " + std::to_string(i % slots) + " at " +
                                 std::to_string(offset) + " (" + std::to_string(want_bytes) + " bytes)");
    }
    e.range = static_cast<uint32_t>(range);
    e.slot = static_cast<uint32_t>(slot);
    offset += e.bytes;
    blocks.push_back(e);
  }
  return blocks;
}

}  // namespace

bool parse_shard_index(std::span<const uint8_t> tail, uint64_t file_size, const RankInfo& rank,
                       int rank_number, size_t slots, const std::string& path,
                       std::vector<BlockEntry>* blocks, uint64_t* needed) {
  const uint64_t have = tail.size();
  if (have > file_size) detail::bad_file(path, "internal: tail longer than the file");
  if (file_size < kShardTrailerBytes || (have >= kShardTrailerBytes &&
      std::memcmp(tail.data() + have - 8, detail::kTrailerMagic, 8) != 0)) {
    detail::bad_file(path, "truncated: " + std::to_string(file_size) +
                               " bytes, no trailer (expected 'STRTEND1' in the last 24 bytes)");
  }
  if (have < kShardTrailerBytes) {
    *needed = kShardTrailerBytes;
    return false;
  }
  const uint8_t* trailer = tail.data() + have - kShardTrailerBytes;
  const uint64_t index_len = detail::get_u64(trailer);
  const uint64_t index_hash = detail::get_u64(trailer + 8);
  // Whatever the stored length, the file must be header + data + index + trailer exactly.
  const auto expected_size = detail::checked_add(kShardHeaderBytes + kShardTrailerBytes, rank.data_bytes);
  const auto with_index = expected_size ? detail::checked_add(*expected_size, index_len) : std::nullopt;
  if (!with_index || *with_index != file_size) {
    detail::bad_file(path, std::to_string(file_size) + " bytes, expected " +
                               (expected_size ? std::to_string(*expected_size) : std::string("?")) +
                               " + an index of " + std::to_string(index_len) +
                               " bytes (header, data_bytes " + std::to_string(rank.data_bytes) +
                               " from metadata.json, trailer): truncated, damaged or another checkpoint's file");
  }
  if (have < index_len + kShardTrailerBytes) {
    *needed = index_len + kShardTrailerBytes;
    return false;
  }
  const auto* index = reinterpret_cast<const char*>(trailer - index_len);
  if (XXH3_64bits(index, index_len) != index_hash) {
    detail::bad_file(path, "index checksum mismatch: the file was changed or damaged");
  }
  const json doc = json::parse(index, index + index_len, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) detail::bad_file(path, "index: not a JSON object");
  const auto version = doc.find("format_version");
  if (version == doc.end() || !version->is_number_unsigned() || version->get<uint64_t>() == 0 ||
      version->get<uint64_t>() > static_cast<uint64_t>(kFormatVersion)) {
    detail::bad_file(path, "index: format_version: expected 1 to " + std::to_string(kFormatVersion));
  }
  const auto r = doc.find("rank");
  if (r == doc.end() || !r->is_number_unsigned() || r->get<uint64_t>() != static_cast<uint64_t>(rank_number)) {
    detail::bad_file(path, "index: written by rank " + (r == doc.end() ? std::string("?") : r->dump()) +
                               ", expected rank " + std::to_string(rank_number));
  }
  const auto list = doc.find("blocks");
  if (list == doc.end() || !list->is_array()) detail::bad_file(path, "index: blocks: expected a list");
  *blocks = check_blocks(*list, rank, slots, path);
  return true;
}

}  // namespace strata::ckpt
