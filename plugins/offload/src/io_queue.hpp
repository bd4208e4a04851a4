// Asynchronous reads and writes on one file through io_uring (liburing). Each operation carries a
// tag (the buffer it uses); wait(tag) returns once every operation on that buffer has finished.
// Where the kernel refuses io_uring (old kernels, seccomp filters in containers) the queue does
// the same transfers synchronously, so results never depend on it, only the overlap does
// (STRATA_NVME_SYNC_IO=1 forces that path).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct io_uring;

namespace strata::offload {

class IoQueue {
 public:
  // `tags`: how many buffers will be in use; each has at most two operations in flight.
  // `what`: names the file in error messages.
  IoQueue(int fd, unsigned tags, std::string what);
  ~IoQueue();
  IoQueue(const IoQueue&) = delete;
  IoQueue& operator=(const IoQueue&) = delete;

  // Empty when io_uring works, else why it does not (for a warning).
  const std::string& fallback_reason() const { return fallback_reason_; }

  void read(unsigned tag, void* buf, uint64_t bytes, uint64_t offset);
  void write(unsigned tag, const void* buf, uint64_t bytes, uint64_t offset);
  // Writes `buf` out, then (linked: only after the write finished) reads into it from elsewhere.
  void write_then_read(unsigned tag, void* buf, uint64_t write_bytes, uint64_t write_offset,
                       uint64_t read_bytes, uint64_t read_offset);
  // Blocks until nothing is in flight on `tag`; throws sdk::Error for a failed or short transfer.
  void wait(unsigned tag);
  // Waits for everything and swallows errors: for unwinding after another error.
  void drain() noexcept;

 private:
  struct Op;
  void submit(Op* op, bool link_next);
  void complete_one();  // waits for one completion; records the first error
  void sync_transfer(const Op& op);

  int fd_;
  std::string what_;
  std::unique_ptr<io_uring> ring_;
  std::string fallback_reason_;
  std::vector<unsigned> in_flight_;  // per tag
  std::string error_;                // first failure not yet reported
};

}  // namespace strata::offload
