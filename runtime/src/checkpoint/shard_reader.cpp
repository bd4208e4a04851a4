// ShardReader: opens one rank's shard file and checks its header and index against the metadata
// up front, so read_block only has to move bytes and compare each block's checksum.
#include "checkpoint/format.hpp"
#include "checkpoint/io_detail.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace strata::ckpt {

namespace {

// The 64-byte header says which file this is: a Strata shard, of a version this code reads, of
// the rank the metadata expects in this place.
void check_header(const uint8_t* header, int rank, const std::string& path) {
  if (std::memcmp(header, detail::kShardMagic, 8) != 0) {
    detail::bad_file(path, "not a Strata shard file (expected 'STRTSHRD' at offset 0)");
  }
  const uint32_t version = detail::get_u32(header + 8);
  if (version == 0 || version > static_cast<uint32_t>(kFormatVersion)) {
    detail::bad_file(path, "shard format_version " + std::to_string(version) + " is newer than this reader (" +
                               std::to_string(kFormatVersion) + "): written by a newer Strata");
  }
  const uint32_t written_by = detail::get_u32(header + 12);
  if (written_by != static_cast<uint32_t>(rank)) {
    detail::bad_file(path, "written by rank " + std::to_string(written_by) + ", expected rank " +
                               std::to_string(rank) + "'s file: a file of another rank or checkpoint");
  }
}

}  // namespace

ShardReader::ShardReader(const std::string& path, const Metadata& meta, int rank)
    : path_(path), meta_(&meta), rank_(rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= meta.ranks.size()) {
    throw rt::Error(STRATA_ERR_INVALID_ARGUMENT, path + ": rank " + std::to_string(rank) +
                                                     " is not in the checkpoint's " +
                                                     std::to_string(meta.ranks.size()) + " ranks");
  }
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    if (errno == ENOENT) {
      detail::bad_file(path, "missing: rank " + std::to_string(rank) + "'s shard file, listed in " + kMetadataFile);
    }
    detail::io_failure(path, "cannot open");
  }
  try {
    struct stat st {};
    if (::fstat(fd_, &st) != 0) detail::io_failure(path, "cannot stat");
    if (!S_ISREG(st.st_mode)) detail::bad_file(path, "not a regular file");
    file_size_ = static_cast<uint64_t>(st.st_size);
    // A header too short to read is reported by the trailer check below as a truncation.
    if (file_size_ >= kShardHeaderBytes) {
      uint8_t header[kShardHeaderBytes];
      if (!detail::pread_fully(fd_, header, sizeof header, 0, path)) detail::bad_file(path, "shrank while being read");
      check_header(header, rank, path);
    }
    // The index is usually small: one read of the last 64 KiB, a second only for a larger one.
    std::vector<uint8_t> tail;
    uint64_t want = std::min<uint64_t>(file_size_, 64 << 10);
    for (;;) {
      tail.resize(want);
      if (!detail::pread_fully(fd_, tail.data(), want, file_size_ - want, path)) {
        detail::bad_file(path, "shrank while being read");
      }
      uint64_t needed = 0;
      if (parse_shard_index(tail, file_size_, meta.ranks[static_cast<size_t>(rank)], rank, meta.slots.size(),
                            path, &blocks_, &needed)) {
        break;
      }
      if (needed <= want) detail::bad_file(path, "internal: index parse asked for no more bytes");
      want = needed;
    }
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

ShardReader::~ShardReader() {
  if (fd_ >= 0) ::close(fd_);
}

void ShardReader::read_block(uint32_t range, uint32_t slot, float* out) const {
  const RankInfo& info = meta_->ranks[static_cast<size_t>(rank_)];
  const size_t slots = meta_->slots.size();
  if (range >= info.ranges.size() || slot >= slots) {
    throw rt::Error(STRATA_ERR_INVALID_ARGUMENT, path_ + ": no block (range " + std::to_string(range) +
                                                     ", slot " + std::to_string(slot) + ")");
  }
  const BlockEntry& block = blocks_[range * slots + slot];
  detail::BlockChecksum checksum(path_);
  // Read and hash piece by piece: each piece is hashed while it is still in cache.
  auto* bytes = reinterpret_cast<uint8_t*>(out);
  for (uint64_t done = 0; done < block.bytes;) {
    const uint64_t piece = std::min(detail::kIoPiece, block.bytes - done);
    if (!detail::pread_fully(fd_, bytes + done, piece, block.offset + done, path_)) {
      detail::bad_file(path_, "truncated while being read (at byte " + std::to_string(block.offset + done) + ")");
    }
    checksum.update(bytes + done, piece);
    done += piece;
  }
  if (checksum.digest() != block.xxh3) {
    const Range& r = info.ranges[range];
    detail::bad_file(path_, "checksum mismatch in block '" + meta_->slots[slot] + "' of " +
                                meta_->params[r.param].name + " elements [" + std::to_string(r.offset) + ", " +
                                std::to_string(r.offset + r.count) + "): the file was changed or damaged");
  }
}

}  // namespace strata::ckpt
