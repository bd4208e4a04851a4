// libFuzzer target: the checkpoint format's two parsers of untrusted bytes. Whatever the input,
// the only way out is a result or a strata::rt::Error: a crash, a sanitizer report, a hang or any
// other exception is a bug. The first byte selects what the rest is:
//   0 (mod 3): metadata.json text for parse_metadata;
//   1: a shard file's tail, taken as is, for parse_shard_index (trailer, checksum, sizes);
//   2: the index JSON text, given a valid trailer here (length and XXH3) so the fuzzer reaches the
//      index's own checks instead of stopping at its checksum.
#include "checkpoint/format.hpp"
#include "error.hpp"

#include <xxhash.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using namespace strata::ckpt;

// A fixed rank: two ranges of two parameters, two slots (56 data bytes).
const RankInfo& fixed_rank() {
  static const RankInfo rank = [] {
    RankInfo r;
    r.file = "rank00001.shard";
    r.ranges = {{0, 0, 4}, {1, 2, 3}};
    r.data_bytes = data_bytes(r.ranges, 2);
    return r;
  }();
  return rank;
}

void index_from_tail(const uint8_t* data, size_t size, uint64_t file_size) {
  std::vector<BlockEntry> blocks;
  uint64_t needed = 0;
  (void)parse_shard_index({data, size}, file_size, fixed_rank(), 1, 2, "fuzz.shard", &blocks, &needed);
}

void put_u64(uint8_t* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0] % 3;
  ++data;
  --size;
  try {
    if (mode == 0) {
      const Metadata meta = parse_metadata({reinterpret_cast<const char*>(data), size}, "fuzz/metadata.json");
      (void)metadata_text(meta);  // what a save of a loaded checkpoint would write
    } else if (mode == 1) {
      // The whole file, or its tail as a reader that read too little would pass it.
      index_from_tail(data, size, size);
      if (size > 24) index_from_tail(data + size / 2, size - size / 2, size);
    } else {
      std::vector<uint8_t> tail(data, data + size);
      tail.resize(size + kShardTrailerBytes);
      put_u64(tail.data() + size, size);
      put_u64(tail.data() + size + 8, XXH3_64bits(data, size));
      std::memcpy(tail.data() + size + 16, "STRTEND1", 8);
      const uint64_t file_size = kShardHeaderBytes + fixed_rank().data_bytes + tail.size();
      index_from_tail(tail.data(), tail.size(), file_size);
    }
  } catch (const strata::rt::Error&) {
    // The expected outcome for almost every input: one sentence naming what is wrong.
  }
  return 0;
}
