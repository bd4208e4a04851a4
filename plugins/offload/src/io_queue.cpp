#include "io_queue.hpp"

#include <liburing.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <strata/plugin.hpp>

#include "state_store.hpp"

namespace strata::offload {

struct IoQueue::Op {
  unsigned tag;
  bool write;
  void* buf;
  uint64_t bytes;
  uint64_t offset;
};

namespace {

std::string describe(const char* verb, uint64_t bytes, uint64_t offset, const std::string& what) {
  return std::string(verb) + " of " + format_bytes(bytes) + " at offset " + std::to_string(offset) +
         " in " + what;
}

}  // namespace

IoQueue::IoQueue(int fd, unsigned tags, std::string what)
    : fd_(fd), what_(std::move(what)), ring_(std::make_unique<io_uring>()), in_flight_(tags, 0) {
  // STRATA_NVME_SYNC_IO=1 takes the path a kernel without io_uring takes (for tests, and for
  // ruling io_uring out when a drive misbehaves).
  if (const char* sync = std::getenv("STRATA_NVME_SYNC_IO"); sync != nullptr && sync[0] == '1') {
    fallback_reason_ = "STRATA_NVME_SYNC_IO=1";
    ring_.reset();
    return;
  }
  const int rc = io_uring_queue_init(2 * tags + 2, ring_.get(), 0);
  if (rc < 0) {
    fallback_reason_ = std::string("io_uring_queue_init: ") + std::strerror(-rc);
    ring_.reset();
  }
}

IoQueue::~IoQueue() {
  drain();
  if (ring_) io_uring_queue_exit(ring_.get());
}

void IoQueue::sync_transfer(const Op& op) {
  auto* p = static_cast<char*>(op.buf);
  uint64_t done = 0;
  while (done < op.bytes) {
    const auto off = static_cast<off_t>(op.offset + done);
    const ssize_t n = op.write ? ::pwrite(fd_, p + done, op.bytes - done, off)
                               : ::pread(fd_, p + done, op.bytes - done, off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "unexpected end of file";
      sdk::fail(STRATA_ERR_INTERNAL,
                "nvme offload: " + describe(op.write ? "write" : "read", op.bytes, op.offset,
                                            what_) + " failed: " + why);
    }
    done += static_cast<uint64_t>(n);
  }
}

void IoQueue::submit(Op* op, bool link_next) {
  if (!ring_) {
    std::unique_ptr<Op> owned(op);
    sync_transfer(*op);
    return;
  }
  io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
  if (sqe == nullptr) {  // cannot happen with two operations per tag; be safe anyway
    io_uring_submit(ring_.get());
    complete_one();
    sqe = io_uring_get_sqe(ring_.get());
  }
  if (op->write) {
    io_uring_prep_write(sqe, fd_, op->buf, static_cast<unsigned>(op->bytes), op->offset);
  } else {
    io_uring_prep_read(sqe, fd_, op->buf, static_cast<unsigned>(op->bytes), op->offset);
  }
  if (link_next) io_uring_sqe_set_flags(sqe, IOSQE_IO_LINK);
  io_uring_sqe_set_data(sqe, op);
  ++in_flight_[op->tag];
  if (!link_next) io_uring_submit(ring_.get());
}

void IoQueue::read(unsigned tag, void* buf, uint64_t bytes, uint64_t offset) {
  submit(new Op{tag, false, buf, bytes, offset}, false);
}

void IoQueue::write(unsigned tag, const void* buf, uint64_t bytes, uint64_t offset) {
  submit(new Op{tag, true, const_cast<void*>(buf), bytes, offset}, false);
}

void IoQueue::write_then_read(unsigned tag, void* buf, uint64_t write_bytes,
                              uint64_t write_offset, uint64_t read_bytes, uint64_t read_offset) {
  submit(new Op{tag, true, buf, write_bytes, write_offset}, true);
  submit(new Op{tag, false, buf, read_bytes, read_offset}, false);
}

void IoQueue::complete_one() {
  io_uring_cqe* cqe = nullptr;
  int rc;
  do {
    rc = io_uring_wait_cqe(ring_.get(), &cqe);
  } while (rc == -EINTR);
  if (rc < 0) {
    // The ring itself failed: nothing can be in flight that we could still wait for.
    std::fill(in_flight_.begin(), in_flight_.end(), 0u);
    if (error_.empty()) error_ = std::string("io_uring_wait_cqe: ") + std::strerror(-rc);
    return;
  }
  std::unique_ptr<Op> op(static_cast<Op*>(io_uring_cqe_get_data(cqe)));
  const int res = cqe->res;
  io_uring_cqe_seen(ring_.get(), cqe);
  --in_flight_[op->tag];
  if (res == static_cast<int>(op->bytes) || !error_.empty()) return;
  const std::string why = res < 0 ? std::strerror(-res)
                                  : "short transfer of " + std::to_string(res) + " bytes";
  error_ = describe(op->write ? "write" : "read", op->bytes, op->offset, what_) + " failed: " + why;
}

void IoQueue::wait(unsigned tag) {
  while (ring_ && in_flight_[tag] > 0) complete_one();
  if (!error_.empty()) {
    const std::string message = "nvme offload: " + error_;
    error_.clear();
    drain();
    sdk::fail(STRATA_ERR_INTERNAL, message);
  }
}

void IoQueue::drain() noexcept {
  if (!ring_) return;
  for (unsigned tag = 0; tag < in_flight_.size(); ++tag) {
    while (in_flight_[tag] > 0) complete_one();
  }
}

}  // namespace strata::offload
