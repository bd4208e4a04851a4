// ShardWriter: one rank's shard file written straight from the caller's buffers in large write()
// calls, each block hashed piece by piece just before the piece goes out (while it is in cache),
// so a save costs about what a plain sequential write of the same bytes costs.
#include "checkpoint/format.hpp"
#include "checkpoint/io_detail.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace strata::ckpt {

namespace {

// Bytes the process's shard writers have written so far, for the test hook: it counts over every
// save of the process, so that a test can let a job's first saves complete and stop a later one.
std::atomic<uint64_t> g_bytes_written{0};

// STRATA_TEST_SAVE_PAUSE_AFTER_BYTES=N, the crash tests' hook: where in this file the process's
// N-th byte falls (0: off; 1 when an earlier file already passed it).
uint64_t pause_after_from_env() {
  const char* text = std::getenv("STRATA_TEST_SAVE_PAUSE_AFTER_BYTES");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(text, &end, 10);
  if (*end != '\0' || n == 0) return 0;
  const uint64_t before = g_bytes_written.load();
  return n > before ? n - before : 1;
}

}  // namespace

ShardWriter::ShardWriter(const std::string& path, int rank)
    : path_(path), rank_(rank), pause_after_(pause_after_from_env()) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) detail::io_failure(path_, "cannot create");
  uint8_t header[kShardHeaderBytes] = {};
  std::memcpy(header, detail::kShardMagic, 8);
  detail::put_u32(header + 8, static_cast<uint32_t>(kFormatVersion));
  detail::put_u32(header + 12, static_cast<uint32_t>(rank));
  try {
    write_all(header, sizeof header);
  } catch (...) {
    ::close(fd_);  // the destructor does not run for a constructor that throws
    throw;
  }
}

ShardWriter::~ShardWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void ShardWriter::write_block(uint32_t range, uint32_t slot, const float* data, uint64_t count) {
  if (fd_ < 0) throw rt::Error(STRATA_ERR_INTERNAL, path_ + ": write_block after finish");
  // The reader checks the order against the metadata; catching a caller's mistake here names it
  // at the save instead of at the next load.
  if (!blocks_.empty() && (range < blocks_.back().range ||
                           (range == blocks_.back().range && slot <= blocks_.back().slot))) {
    throw rt::Error(STRATA_ERR_INTERNAL, path_ + ": block (range " + std::to_string(range) + ", slot " +
                                             std::to_string(slot) + ") written out of data order");
  }
  detail::BlockChecksum checksum(path_);
  BlockEntry entry{range, slot, offset_, count * sizeof(float), 0};
  const auto* bytes = reinterpret_cast<const uint8_t*>(data);
  for (uint64_t done = 0; done < entry.bytes;) {
    const uint64_t piece = std::min(detail::kIoPiece, entry.bytes - done);
    checksum.update(bytes + done, piece);
    write_all(bytes + done, piece);
    done += piece;
  }
  entry.xxh3 = checksum.digest();
  blocks_.push_back(entry);
}

void ShardWriter::finish() {
  if (fd_ < 0) throw rt::Error(STRATA_ERR_INTERNAL, path_ + ": finish called twice");
  // Index and trailer go out in one write.
  std::string tail = detail::shard_index_text(rank_, blocks_);
  const uint64_t index_len = tail.size();
  const uint64_t index_hash = XXH3_64bits(tail.data(), index_len);
  tail.resize(index_len + kShardTrailerBytes);
  auto* trailer = reinterpret_cast<uint8_t*>(tail.data() + index_len);
  detail::put_u64(trailer, index_len);
  detail::put_u64(trailer + 8, index_hash);
  std::memcpy(trailer + 16, detail::kTrailerMagic, 8);
  write_all(tail.data(), tail.size());
  if (::fdatasync(fd_) != 0) detail::io_failure(path_, "fdatasync failed");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) detail::io_failure(path_, "close failed");
}

void ShardWriter::write_all(const void* data, uint64_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    uint64_t piece = bytes;
    // With the test hook on, stop exactly at its byte so the partial file's size is known.
    if (pause_after_ > offset_) piece = std::min(piece, pause_after_ - offset_);
    detail::write_fully(fd_, p, piece, path_);
    p += piece;
    bytes -= piece;
    offset_ += piece;
    g_bytes_written += piece;
    if (pause_after_ != 0 && offset_ >= pause_after_) pause_for_test();
  }
}

// The hook's pause: what was written is on the drive, the test is told, and the process waits
// for the SIGKILL that simulates a crash in the middle of a save.
void ShardWriter::pause_for_test() {
  ::fsync(fd_);
  const std::string line = "strata test hook: paused writing " + path_ + "\n";
  (void)!::write(STDERR_FILENO, line.data(), line.size());
  for (;;) ::pause();
}

}  // namespace strata::ckpt
