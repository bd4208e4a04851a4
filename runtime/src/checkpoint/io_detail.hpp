// What the checkpoint format's files share and format.hpp does not promise: error construction,
// checked arithmetic, hex checksums and the whole-buffer read/write loops.
#pragma once

#include "checkpoint/format.hpp"
#include "error.hpp"

#include <xxhash.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::ckpt::detail {

// A damaged, foreign or inconsistent file: the user's input is wrong.
[[noreturn]] inline void bad_file(const std::string& path, const std::string& what) {
  throw rt::Error(STRATA_ERR_INVALID_ARGUMENT, path + ": " + what);
}
// A system call failed (a full drive, EIO): errno's sentence is appended.
[[noreturn]] inline void io_failure(const std::string& path, const std::string& what) {
  throw rt::Error(STRATA_ERR_INTERNAL, path + ": " + what + ": " + rt::errno_text());
}

// a * b and a + b, or nothing on uint64 overflow (counts come from untrusted files).
inline std::optional<uint64_t> checked_mul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
inline std::optional<uint64_t> checked_add(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// A block's XXH3-64 checksum, fed piece by piece while each piece is still in cache (the shard
// writer and reader both hash a block this way).
class BlockChecksum {
 public:
  // Throws STRATA_ERR_INTERNAL naming `path` when no hash state can be allocated.
  explicit BlockChecksum(const std::string& path);
  void update(const void* data, uint64_t bytes) { XXH3_64bits_update(state_.get(), data, bytes); }
  uint64_t digest() const { return XXH3_64bits_digest(state_.get()); }

 private:
  struct Free {
    void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
  };
  std::unique_ptr<XXH3_state_t, Free> state_;
};

// 16 lowercase hex digits, and back (nothing unless exactly 16 hex digits).
std::string hex64(uint64_t value);
std::optional<uint64_t> parse_hex64(std::string_view text);

// Little-endian fixed-width fields of the header and trailer.
void put_u32(uint8_t* out, uint32_t v);
void put_u64(uint8_t* out, uint64_t v);
uint32_t get_u32(const uint8_t* in);
uint64_t get_u64(const uint8_t* in);

// write() all `bytes`, looping on partial writes and EINTR; throws io_failure naming `path`.
void write_fully(int fd, const void* data, uint64_t bytes, const std::string& path);
// pread() exactly `bytes` at `offset` in pieces of at most 1 GiB; false if the file ends first.
bool pread_fully(int fd, void* out, uint64_t bytes, uint64_t offset, const std::string& path);

// Reads a whole (small) file into `out`; false if it does not exist, throws on other failures.
bool read_whole_file(const std::string& path, std::string* out);

// The shard file's magics (format.hpp) and its index text, written by ShardWriter::finish and
// read by parse_shard_index.
inline constexpr char kShardMagic[] = "STRTSHRD";
inline constexpr char kTrailerMagic[] = "STRTEND1";
std::string shard_index_text(int rank, const std::vector<BlockEntry>& blocks);

// Pieces in which blocks are hashed and moved: large enough that syscalls cost nothing, small
// enough that the piece just hashed is still in cache when write()/pread() copies it.
inline constexpr uint64_t kIoPiece = 4ull << 20;

}  // namespace strata::ckpt::detail
