// The checkpoint format (runtime/src/checkpoint/format.hpp): a synthetic checkpoint written with
// ShardWriter and metadata_text reads back exactly, and every kind of damage is an error naming
// the file and what is wrong.
#include "checkpoint/format.hpp"
#include "error.hpp"
#include "synthetic.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

namespace strata::ckpt {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}
uint64_t file_size(const std::string& path) { return std::filesystem::file_size(path); }
void flip_bit(const std::string& path, uint64_t offset) {
  std::string bytes = read_text(path);
  ASSERT_LT(offset, bytes.size());
  bytes[offset] = static_cast<char>(bytes[offset] ^ 0x10);
  write_text(path, bytes);
}

// The message of the strata::rt::Error that `f` throws (a failure if it throws nothing or
// anything else).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const rt::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a strata::rt::Error";
  return "";
}

class CheckpointFormat : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/strata-ckpt-format-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    written_ = test::write_synthetic(dir_, spec_);
    meta_ = read_metadata(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string shard(int rank) const { return dir_ + "/" + shard_file_name(rank); }
  std::string metadata_path() const { return dir_ + "/" + kMetadataFile; }
  // Byte offset of block (range, slot) of `rank` as the format lays it out.
  uint64_t block_offset(int rank, uint32_t range, uint32_t slot) const {
    uint64_t offset = kShardHeaderBytes;
    const auto& ranges = meta_.ranks[static_cast<size_t>(rank)].ranges;
    for (uint32_t i = 0; i < range; ++i) offset += ranges[i].count * 4 * meta_.slots.size();
    return offset + ranges[range].count * 4 * slot;
  }
  // The metadata document with `edit` applied, as parse_metadata sees it.
  std::string parse_error(const std::function<void(json&)>& edit) {
    json doc = json::parse(read_text(metadata_path()));
    edit(doc);
    return error_of([&] { parse_metadata(doc.dump(), "/d/t/metadata.json"); });
  }

  test::SyntheticSpec spec_;
  std::string dir_;
  Metadata written_, meta_;
};

TEST_F(CheckpointFormat, MetadataRoundTrips) {
  EXPECT_EQ(meta_.format_version, kFormatVersion);
  EXPECT_EQ(meta_.world_size, 3);
  EXPECT_EQ(meta_.slots, spec_.slots);
  ASSERT_EQ(meta_.params.size(), written_.params.size());
  for (size_t p = 0; p < meta_.params.size(); ++p) {
    EXPECT_EQ(meta_.params[p].name, written_.params[p].name);
    EXPECT_EQ(meta_.params[p].count, written_.params[p].count);
    EXPECT_EQ(meta_.params[p].dtype, written_.params[p].dtype);
  }
  ASSERT_EQ(meta_.ranks.size(), 3u);
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(meta_.ranks[r].file, shard_file_name(static_cast<int>(r)));
    EXPECT_EQ(meta_.ranks[r].data_bytes, written_.ranks[r].data_bytes);
    ASSERT_EQ(meta_.ranks[r].ranges.size(), written_.ranks[r].ranges.size());
    for (size_t i = 0; i < meta_.ranks[r].ranges.size(); ++i) {
      EXPECT_EQ(meta_.ranks[r].ranges[i].param, written_.ranks[r].ranges[i].param);
      EXPECT_EQ(meta_.ranks[r].ranges[i].offset, written_.ranks[r].ranges[i].offset);
      EXPECT_EQ(meta_.ranks[r].ranges[i].count, written_.ranks[r].ranges[i].count);
    }
  }
  // The runtime's own keys come back in document; the format's keys are written as specified.
  EXPECT_EQ(meta_.document["counters"]["global_steps"], 12);
  EXPECT_EQ(meta_.document["format"], "strata-checkpoint");
  EXPECT_EQ(meta_.document["params"][1]["shape"], json::array({1000}));
  EXPECT_EQ(meta_.document["ranks"][0]["ranges"][0], json::array({0, 0, 10}));
  EXPECT_EQ(shard_file_name(3), "rank00003.shard");
}

TEST_F(CheckpointFormat, RangesStraddleParameters) {
  // 6050 elements over 3 ranks: rank 1 holds [2016, 4033), the end of layer3 and nothing else...
  // whatever the split, some rank must hold pieces of two parameters.
  bool straddles = false;
  for (const RankInfo& r : meta_.ranks) straddles = straddles || r.ranges.size() > 1;
  EXPECT_TRUE(straddles);
}

TEST_F(CheckpointFormat, ShardsReadBackExactly) {
  for (int r = 0; r < 3; ++r) {
    const ShardReader reader(shard(r), meta_, r);
    EXPECT_EQ(reader.file_size(), file_size(shard(r)));
    const auto& ranges = meta_.ranks[static_cast<size_t>(r)].ranges;
    for (uint32_t i = 0; i < ranges.size(); ++i) {
      for (uint32_t s = 0; s < meta_.slots.size(); ++s) {
        std::vector<float> out(ranges[i].count, -1.0f);
        reader.read_block(i, s, out.data());
        for (uint64_t e = 0; e < out.size(); ++e) {
          ASSERT_EQ(out[e], test::synthetic_value(ranges[i].param, s, ranges[i].offset + e))
              << "rank " << r << " range " << i << " slot " << s << " element " << e;
        }
      }
    }
  }
}

TEST_F(CheckpointFormat, WriterCountsBytesAndKeepsOrder) {
  const std::string path = dir_ + "/extra.shard";
  ShardWriter writer(path, 0);
  EXPECT_EQ(writer.bytes_written(), kShardHeaderBytes);
  const float values[4] = {1, 2, 3, 4};
  writer.write_block(0, 1, values, 4);
  EXPECT_EQ(writer.bytes_written(), kShardHeaderBytes + 16);
  EXPECT_THAT(error_of([&] { writer.write_block(0, 0, values, 4); }), HasSubstr("out of data order"));
}

TEST_F(CheckpointFormat, IndexNeedsMoreTail) {
  const std::string bytes = read_text(shard(1));
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  std::vector<BlockEntry> blocks;
  uint64_t needed = 0;
  const std::span<const uint8_t> tail24(data + bytes.size() - 24, 24);
  ASSERT_FALSE(parse_shard_index(tail24, bytes.size(), meta_.ranks[1], 1, 3, "f", &blocks, &needed));
  ASSERT_GT(needed, 24u);
  const std::span<const uint8_t> tail(data + bytes.size() - needed, needed);
  ASSERT_TRUE(parse_shard_index(tail, bytes.size(), meta_.ranks[1], 1, 3, "f", &blocks, &needed));
  EXPECT_EQ(blocks.size(), meta_.ranks[1].ranges.size() * 3);
  EXPECT_EQ(blocks[0].offset, kShardHeaderBytes);
}

// Every place a file can end early: inside the header, the data, the index, the trailer.
TEST_F(CheckpointFormat, TruncatedFilesNameTheFileAndTheTrailer) {
  const std::string original = read_text(shard(1));
  const uint64_t size = original.size();
  for (uint64_t length : {uint64_t{0}, uint64_t{10}, uint64_t{63}, uint64_t{64}, kShardHeaderBytes + 100,
                          block_offset(1, 0, 2) + 3, size - kShardTrailerBytes - 10, size - kShardTrailerBytes,
                          size - 5, size - 1}) {
    write_text(shard(1), original.substr(0, length));
    EXPECT_EQ(error_of([&] { ShardReader(shard(1), meta_, 1); }),
              shard(1) + ": truncated: " + std::to_string(length) +
                  " bytes, no trailer (expected 'STRTEND1' in the last 24 bytes)")
        << "length " << length;
  }
}

TEST_F(CheckpointFormat, FlippedDataBitNamesParamRangeAndSlot) {
  // Rank 1, its first range, slot exp_avg.
  const Range& r = meta_.ranks[1].ranges[0];
  flip_bit(shard(1), block_offset(1, 0, 1) + 5);
  const ShardReader reader(shard(1), meta_, 1);  // the index is intact: opening succeeds
  std::vector<float> out(r.count);
  reader.read_block(0, 0, out.data());  // other blocks still read
  EXPECT_EQ(error_of([&] { reader.read_block(0, 1, out.data()); }),
            shard(1) + ": checksum mismatch in block 'exp_avg' of " + meta_.params[r.param].name + " elements [" +
                std::to_string(r.offset) + ", " + std::to_string(r.offset + r.count) +
                "): the file was changed or damaged");
}

TEST_F(CheckpointFormat, FlippedIndexBitIsAnIndexChecksumMismatch) {
  flip_bit(shard(2), file_size(shard(2)) - kShardTrailerBytes - 20);
  EXPECT_EQ(error_of([&] { ShardReader(shard(2), meta_, 2); }),
            shard(2) + ": index checksum mismatch: the file was changed or damaged");
}

TEST_F(CheckpointFormat, FlippedHeaderBits) {
  flip_bit(shard(0), 2);
  EXPECT_THAT(error_of([&] { ShardReader(shard(0), meta_, 0); }),
              HasSubstr(shard(0) + ": not a Strata shard file (expected 'STRTSHRD' at offset 0)"));
}

TEST_F(CheckpointFormat, MissingRankFile) {
  ::unlink(shard(2).c_str());
  EXPECT_EQ(error_of([&] { ShardReader(shard(2), meta_, 2); }),
            shard(2) + ": missing: rank 2's shard file, listed in metadata.json");
}

TEST_F(CheckpointFormat, AnotherRanksFile) {
  std::filesystem::copy_file(shard(0), shard(1), std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ(error_of([&] { ShardReader(shard(1), meta_, 1); }),
            shard(1) + ": written by rank 0, expected rank 1's file: a file of another rank or checkpoint");
}

TEST_F(CheckpointFormat, ExtraBytesAfterTheTrailerAreTruncationOrDamage) {
  write_text(shard(1), read_text(shard(1)) + "x");
  EXPECT_THAT(error_of([&] { ShardReader(shard(1), meta_, 1); }), HasSubstr(shard(1) + ": truncated"));
}

TEST_F(CheckpointFormat, NewerMetadataVersion) {
  EXPECT_EQ(parse_error([](json& d) { d["format_version"] = 2; }),
            "/d/t/metadata.json: format_version 2 is newer than this reader (1): written by a newer Strata");
}

TEST_F(CheckpointFormat, MissingMetadataFile) {
  ::unlink(metadata_path().c_str());
  EXPECT_EQ(error_of([&] { read_metadata(dir_); }), metadata_path() + ": missing: not a checkpoint tag folder");
}

TEST_F(CheckpointFormat, MalformedMetadata) {
  const std::string p = "/d/t/metadata.json: ";
  EXPECT_EQ(error_of([] { parse_metadata("{\"format\":", "/d/t/metadata.json"); }), p + "not valid JSON");
  EXPECT_EQ(error_of([] { parse_metadata("[1]", "/d/t/metadata.json"); }), p + "expected a JSON object");
  EXPECT_THAT(parse_error([](json& d) { d["format"] = "other"; }), HasSubstr(p + "format: expected"));
  EXPECT_EQ(parse_error([](json& d) { d.erase("slots"); }), p + "slots: missing");
  EXPECT_EQ(parse_error([](json& d) { d["slots"] = json::array({"exp_avg", "master"}); }),
            p + "slots: expected a list starting with \"master\"");
  EXPECT_EQ(parse_error([](json& d) { d["slots"][2] = "exp_avg"; }), p + "slots[2]: slot 'exp_avg' listed twice");
  EXPECT_EQ(parse_error([](json& d) { d["params"][1]["count"] = "1000"; }),
            p + "params[1].count: expected a non-negative integer, got string \"1000\"");
  EXPECT_EQ(parse_error([](json& d) { d["params"][1]["count"] = -3; }),
            p + "params[1].count: expected a non-negative integer, got number -3");
  EXPECT_EQ(parse_error([](json& d) { d["params"][0].erase("name"); }), p + "params[0].name: missing");
  EXPECT_EQ(parse_error([](json& d) { d["params"][2]["name"] = "layer0.weight"; }),
            p + "params[2].name: parameter 'layer0.weight' listed twice");
  EXPECT_EQ(parse_error([](json& d) { d["params"][2]["dtype"] = "f64"; }),
            p + "params[2].dtype: expected \"f32\", \"f16\" or \"bf16\", got \"f64\"");
  EXPECT_EQ(parse_error([](json& d) { d["params"][2]["shape"] = json::array({36}); }),
            p + "params[2].shape: expected [37] (the count)");
  EXPECT_EQ(parse_error([](json& d) { d["world_size"] = 4; }),
            p + "world_size: 4 does not match the 3 entries of ranks");
  EXPECT_EQ(parse_error([](json& d) { d["ranks"] = json::array(); }),
            p + "world_size: 3 does not match the 0 entries of ranks");
  EXPECT_EQ(parse_error([](json& d) { d["ranks"][0]["ranges"][0] = json::array({9, 0, 1}); }),
            p + "ranks[0].ranges[0]: parameter 9 does not exist (5 parameters)");
  EXPECT_EQ(parse_error([](json& d) { d["ranks"][0]["ranges"][0] = json::array({0, 5, 6}); }),
            p + "ranks[0].ranges[0]: elements [5, +6) lie outside layer0.weight (10 elements)");
  EXPECT_EQ(parse_error([](json& d) { d["ranks"][0]["ranges"][0] = json::array({0, 0}); }),
            p + "ranks[0].ranges[0]: expected [param, offset, count]");
  EXPECT_EQ(parse_error([](json& d) { d["ranks"][1]["file"] = "../rank00001.shard"; }),
            p + "ranks[1].file: expected a file name inside the tag folder, got \"../rank00001.shard\"");
  EXPECT_EQ(parse_error([](json& d) { d["ranks"][1]["file"] = "rank00000.shard"; }),
            p + "ranks[1].file: 'rank00000.shard' listed twice");
  EXPECT_THAT(parse_error([](json& d) { d["ranks"][0]["data_bytes"] = 7; }),
              HasSubstr(p + "ranks[0].data_bytes: 7 does not match its ranges ("));
  EXPECT_EQ(parse_error([](json& d) { d["ranks"][0].erase("ranges"); }), p + "ranks[0].ranges: missing");
  // Counts whose byte sizes overflow uint64: rejected, not wrapped.
  EXPECT_THAT(parse_error([](json& d) {
                d["params"][0]["count"] = UINT64_MAX;
                d["params"][0].erase("shape");
                d["ranks"][0]["ranges"][0] = json::array({0, 0, UINT64_MAX});
              }),
              HasSubstr("ranks[0].data_bytes: " + std::to_string(meta_.ranks[0].data_bytes) +
                        " does not match its ranges (overflow"));
  EXPECT_THAT(parse_error([](json& d) {
                d["params"][0]["count"] = UINT64_MAX;
                d["params"][0].erase("shape");
                d["ranks"][0]["ranges"][0] = json::array({0, UINT64_MAX, 2});
              }),
              HasSubstr("lie outside"));
}

}  // namespace
}  // namespace strata::ckpt
