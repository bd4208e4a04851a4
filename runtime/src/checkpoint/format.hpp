// The checkpoint format (docs/DESIGN.md, "Checkpoints"): what DIR/TAG/metadata.json and
// DIR/TAG/rankNNNNN.shard hold, and the readers and writer of both. Shared by the runtime (save,
// load), the strata-ckpt tool and the fuzz target; it knows nothing of plugins or communication.
//
// A shard file, format version 1, little-endian:
//   [0, 64)        header: magic "STRTSHRD", u32 format version, u32 rank, 48 zero bytes
//   [64, 64 + D)   data: for each of the rank's ranges in metadata order, for each slot in
//                  metadata order ("master" first, then the optimizer's), the range's `count`
//                  fp32 values of that slot (range-major, slot-minor, no padding)
//   index JSON     {"format_version":1,"rank":R,"blocks":[{"range":i,"slot":s,"offset":O,
//                  "bytes":B,"xxh3":"<16 hex digits>"}...]} in data order
//   trailer (24)   u64 index length, u64 XXH3-64 of the index text, magic "STRTEND1"
// A block's checksum is XXH3-64 (seed 0) of its bytes.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::ckpt {

inline constexpr int kFormatVersion = 1;          // metadata and shard files this code writes
inline constexpr uint64_t kShardHeaderBytes = 64;
inline constexpr uint64_t kShardTrailerBytes = 24;
inline constexpr const char* kMetadataFile = "metadata.json";
inline constexpr const char* kLatestFile = "latest";
inline constexpr const char* kMasterSlot = "master";

// One contiguous run of one parameter's elements: [offset, offset + count).
struct Range {
  uint32_t param = 0;
  uint64_t offset = 0;
  uint64_t count = 0;
};

struct ParamInfo {
  std::string name;
  uint64_t count = 0;   // elements; the shape is [count]
  std::string dtype;    // the model dtype it was trained in: "f32", "f16", "bf16"
};

struct RankInfo {
  std::string file;         // "rank00003.shard", relative to the tag folder
  uint64_t data_bytes = 0;  // sum over ranges of count * 4 * slots.size()
  std::vector<Range> ranges;
};

// metadata.json. `document` is the whole parsed text (the runtime's own keys: counters, scheduler,
// plugin state, manifest, extra); the fields below are the parts every reader needs, checked.
struct Metadata {
  int format_version = kFormatVersion;
  int world_size = 0;
  std::vector<std::string> slots;  // "master" first
  std::vector<ParamInfo> params;
  std::vector<RankInfo> ranks;     // world_size entries, rank order
  nlohmann::json document;
};

// "rank00003.shard".
std::string shard_file_name(int rank);
// The bytes a rank's data section holds for these ranges and slot count.
uint64_t data_bytes(const std::vector<Range>& ranges, size_t slots);

// Parses and checks metadata text read from `path` (for messages): a JSON object whose
// format_version is at most kFormatVersion ("PATH: format_version 2 is newer than this reader (1):
// written by a newer Strata"), whose params, slots and ranks are well formed (names unique, ranges inside
// their parameter, every rank's file named, data_bytes consistent with its ranges). Throws
// strata::rt::Error (STRATA_ERR_INVALID_ARGUMENT) naming the path and the key. Never crashes on
// any input (fuzzed).
Metadata parse_metadata(std::string_view text, const std::string& path);
// Reads and parses DIR/TAG/metadata.json; a missing or unreadable file is an error naming it.
Metadata read_metadata(const std::string& tag_dir);
// The metadata text for `meta` (its fields written over meta.document's), pretty-printed.
std::string metadata_text(const Metadata& meta);

// One block of a shard file's index.
struct BlockEntry {
  uint32_t range = 0;
  uint32_t slot = 0;
  uint64_t offset = 0;  // from the start of the file
  uint64_t bytes = 0;
  uint64_t xxh3 = 0;
};

// Parses a shard file's tail: `tail` is the last min(file_size, N) bytes of a file of `file_size`
// bytes (N large enough to hold the index; parse_shard_index says how many it needs through
// `needed` when tail is too short, returning false). Checks the trailer magic, the index checksum,
// and that the blocks are exactly the data layout `rank` and `slots` imply (in order, no gaps,
// inside the file, the file exactly header + data_bytes + index + trailer long). Throws
// strata::rt::Error naming `path`: "truncated: N bytes, no trailer (...)", "index checksum
// mismatch: ...", ... Never crashes on any input (fuzzed).
bool parse_shard_index(std::span<const uint8_t> tail, uint64_t file_size, const RankInfo& rank,
                       int rank_number, size_t slots, const std::string& path,
                       std::vector<BlockEntry>* blocks, uint64_t* needed);

// Writes one rank's shard file: header, then blocks in data order, then the index and trailer;
// finish() fsyncs and closes. Throws strata::rt::Error naming the path and errno on any failure
// (a full drive). The block checksums are computed as the bytes go out.
// Test hook: with STRATA_TEST_SAVE_PAUSE_AFTER_BYTES=N in the environment (read once per writer),
// the writer stops once the process's shard writers have written exactly N bytes in all (so a
// test can let a job's first saves complete and stop a later one), fsyncs them, writes "strata test hook:
// paused writing PATH" to stderr and sleeps forever (crash tests SIGKILL it there).
class ShardWriter {
 public:
  ShardWriter(const std::string& path, int rank);
  ~ShardWriter();  // closes without finishing if finish() was not reached (the file is partial)
  ShardWriter(const ShardWriter&) = delete;
  ShardWriter& operator=(const ShardWriter&) = delete;
  // The next block in data order.
  void write_block(uint32_t range, uint32_t slot, const float* data, uint64_t count);
  void finish();
  uint64_t bytes_written() const { return offset_; }

 private:
  void write_all(const void* data, uint64_t bytes);
  void pause_for_test();
  std::string path_;
  int rank_ = 0;
  int fd_ = -1;
  uint64_t offset_ = 0;
  // STRATA_TEST_SAVE_PAUSE_AFTER_BYTES, read once: 0 = off, else pause once offset_ reaches it.
  uint64_t pause_after_ = 0;
  std::vector<BlockEntry> blocks_;
};

// Reads one rank's shard file: opens it, checks the header and index against the metadata (a
// missing file, a truncated one, another rank's, a corrupt index: errors naming the file).
// `meta` must outlive the reader.
class ShardReader {
 public:
  ShardReader(const std::string& path, const Metadata& meta, int rank);
  ~ShardReader();
  ShardReader(const ShardReader&) = delete;
  ShardReader& operator=(const ShardReader&) = delete;
  // Reads block (range, slot) whole into `out` (ranges[range].count floats) and checks its
  // checksum: a mismatch names the file, the parameter, the range and the slot.
  void read_block(uint32_t range, uint32_t slot, float* out) const;
  const std::string& path() const { return path_; }
  uint64_t file_size() const { return file_size_; }

 private:
  std::string path_;
  const Metadata* meta_ = nullptr;
  int rank_ = 0;
  int fd_ = -1;
  uint64_t file_size_ = 0;
  std::vector<BlockEntry> blocks_;
};

// fsync a folder so a rename in it is on the drive. Throws naming it.
void fsync_dir(const std::string& dir);
// Writes `text` to `path` atomically: path.tmp, fsync, rename, fsync the folder.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace strata::ckpt
