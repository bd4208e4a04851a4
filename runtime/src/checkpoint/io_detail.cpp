#include "checkpoint/io_detail.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace strata::ckpt::detail {

BlockChecksum::BlockChecksum(const std::string& path) : state_(XXH3_createState()) {
  if (!state_ || XXH3_64bits_reset(state_.get()) != XXH_OK) {
    throw rt::Error(STRATA_ERR_INTERNAL, path + ": cannot allocate a checksum state");
  }
}

std::string hex64(uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) out[static_cast<size_t>(i)] = kDigits[value & 0xf];
  return out;
}

std::optional<uint64_t> parse_hex64(std::string_view text) {
  if (text.size() != 16) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    int digit = 0;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    else return std::nullopt;
    value = value << 4 | static_cast<uint64_t>(digit);
  }
  return value;
}

void put_u32(uint8_t* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const uint8_t* in) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | in[i];
  return v;
}
uint64_t get_u64(const uint8_t* in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | in[i];
  return v;
}

// Linux moves at most 0x7ffff000 bytes per call; 1 GiB pieces stay under it everywhere.
static constexpr uint64_t kMaxSyscall = 1ull << 30;

void write_fully(int fd, const void* data, uint64_t bytes, const std::string& path) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t n = ::write(fd, p, std::min(bytes, kMaxSyscall));
    if (n < 0) {
      if (errno == EINTR) continue;
      io_failure(path, "write failed");
    }
    p += n;
    bytes -= static_cast<uint64_t>(n);
  }
}

bool pread_fully(int fd, void* out, uint64_t bytes, uint64_t offset, const std::string& path) {
  auto* p = static_cast<uint8_t*>(out);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd, p, std::min(bytes, kMaxSyscall), static_cast<off_t>(offset));
    if (n < 0) {
      if (errno == EINTR) continue;
      io_failure(path, "read failed");
    }
    if (n == 0) return false;
    p += n;
    bytes -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

bool read_whole_file(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return false;
    io_failure(path, "cannot open");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    bad_file(path, "not a regular file");
  }
  out->resize(static_cast<size_t>(st.st_size));
  try {
    if (!pread_fully(fd, out->data(), out->size(), 0, path)) bad_file(path, "shrank while being read");
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  return true;
}

}  // namespace strata::ckpt::detail
