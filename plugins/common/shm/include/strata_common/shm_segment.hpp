// A POSIX shared-memory segment that the ranks of one host map, and that leaves nothing behind.
//
// Local rank 0 creates /dev/shm/strata-shm-<uid>-<pid>-<n>, the others open it by name, and once
// every rank has mapped it, rank 0 unlinks the name (ShmSegment::unlink). From then on the memory
// lives only in the ranks' mappings: it goes away with the last of them, whether the ranks exit,
// crash or are killed. Only a crash in the short window between create and unlink can leave a
// name behind; its creator's pid is in the name, so the next job's rank 0 recognises it as stale
// (that pid no longer runs) and removes it (remove_stale_segments).
//
// The memory is reserved at creation (posix_fallocate), so a /dev/shm too small for it (a
// container's default 64 MiB, say) fails there, with a message, instead of with SIGBUS at the
// first touch of a page tmpfs cannot back.
#pragma once

#include <cstddef>
#include <string>

namespace strata::common::shm {

class ShmSegment {
 public:
  // Creates and maps a new segment of `bytes` (zero-filled). Throws sdk::Error (STRATA_ERR_COMM)
  // naming the segment and the failing call.
  static ShmSegment create(size_t bytes);
  // Maps the segment another rank created. Throws like create().
  static ShmSegment open(const std::string& name, size_t bytes);

  ShmSegment() = default;
  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;
  ~ShmSegment();  // unmaps; unlinks too if this process created it and has not unlinked yet

  // Removes the name (the creator calls it once every rank has mapped the segment).
  void unlink();

  char* data() const { return static_cast<char*>(data_); }
  size_t size() const { return size_; }
  const std::string& name() const { return name_; }  // "/strata-shm-..."

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  std::string name_;
  bool linked_ = false;  // we created the name and it still exists
};

// The prefix of every segment name: "strata-shm-<uid>-" (as listed in /dev/shm, without the '/').
std::string segment_prefix();

// Unlinks this user's segments whose creating process no longer runs. Returns how many.
int remove_stale_segments();

}  // namespace strata::common::shm
