#include "page_buffer.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <string>

namespace strata::zero {

namespace {

// Under AddressSanitizer the buffer stays a heap block of the host's, where an overflow is caught
// (the runtime's ledger keeps every block on the heap there for the same reason).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kOwnMapping = false;
#else
constexpr bool kOwnMapping = true;
#endif

}  // namespace

PageBuffer::PageBuffer(const sdk::Host& host, size_t count, strata_mem_category category)
    : memory_(host), count_(count) {
  const size_t bytes = count * sizeof(float);
  if (bytes == 0) return;
  if (!kOwnMapping || memory_.on_device() || !host.has_locations()) {
    heap_ = Buffer<float>(host, count, category);
    return;
  }
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t mapped = (bytes + page - 1) / page * page;
  // Fresh anonymous pages read as zero: nothing to write, and nothing resident until written.
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    sdk::fail(STRATA_ERR_OUT_OF_MEMORY,
              "zero: could not map " + std::to_string(bytes) + " bytes of host memory");
  }
  host.account(category, STRATA_MEM_HOST, static_cast<int64_t>(bytes));
  mapping_ = std::unique_ptr<float, PageUnmap>(static_cast<float*>(p),
                                               PageUnmap{host, category, bytes, mapped});
}

void PageUnmap::operator()(float* p) const {
  munmap(p, mapped);
  host.account(category, STRATA_MEM_HOST, -static_cast<int64_t>(bytes));
}

void PageBuffer::clear() {
  // MADV_DONTNEED on private anonymous memory is exactly zeroing: the next access maps a zero
  // page. (madvise, not posix_madvise: glibc makes POSIX_MADV_DONTNEED a no-op.)
  if (mapping_ && madvise(mapping_.get(), mapping_.get_deleter().mapped, MADV_DONTNEED) == 0) {
    return;
  }
  if (data() != nullptr) memory_.zero(data(), count_ * sizeof(float));
}

}  // namespace strata::zero
