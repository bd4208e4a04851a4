#include "page_buffer.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <string>
#include <utility>

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
    : host_(host), memory_(host), category_(category), count_(count) {
  const size_t bytes = count * sizeof(float);
  if (bytes == 0) return;
  if (!kOwnMapping || memory_.on_device() || !host.has_locations()) {
    data_ = static_cast<float*>(memory_.alloc(bytes, category));
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
  data_ = static_cast<float*>(p);
  mapped_bytes_ = mapped;
  host_.account(category_, STRATA_MEM_HOST, static_cast<int64_t>(bytes));
}

PageBuffer::~PageBuffer() {
  if (data_ == nullptr) return;
  if (mapped_bytes_ == 0) {
    memory_.free(data_);
    return;
  }
  munmap(data_, mapped_bytes_);
  host_.account(category_, STRATA_MEM_HOST, -static_cast<int64_t>(count_ * sizeof(float)));
}

void PageBuffer::clear() {
  if (data_ == nullptr) return;
  // MADV_DONTNEED on private anonymous memory is exactly zeroing: the next access maps a zero
  // page. (madvise, not posix_madvise: glibc makes POSIX_MADV_DONTNEED a no-op.)
  if (mapped_bytes_ == 0 || madvise(data_, mapped_bytes_, MADV_DONTNEED) != 0) {
    memory_.zero(data_, count_ * sizeof(float));
  }
}

void PageBuffer::swap(PageBuffer& o) noexcept {
  std::swap(host_, o.host_);
  std::swap(memory_, o.memory_);
  std::swap(category_, o.category_);
  std::swap(data_, o.data_);
  std::swap(count_, o.count_);
  std::swap(mapped_bytes_, o.mapped_bytes_);
}

}  // namespace strata::zero
