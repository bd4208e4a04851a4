#include "swap_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <strata/plugin.hpp>

#include "state_store.hpp"

namespace strata::offload {
namespace {

[[noreturn]] void invalid(const std::string& message) {
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, message);
}

std::string unique_name(const std::string& dir, std::string holds) {
  static std::atomic<unsigned> counter{0};
  for (char& c : holds) c = c == ' ' ? '-' : c;
  return dir + "/strata-" + holds + "-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter++) + ".swp";
}

}  // namespace

SwapFile::SwapFile(const std::string& dir, const std::string& key, const std::string& holds,
                   bool direct)
    : dir_(dir), key_(key), holds_(holds) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    invalid(key + ": " + dir + " does not exist (" + std::strerror(errno) +
            "); expected a directory on the drive that is to hold the " + holds);
  }
  if (!S_ISDIR(st.st_mode)) invalid(key + ": " + dir + " is not a directory");
  for (int attempt = 0; fd_ < 0; ++attempt) {
    name_ = unique_name(dir, holds);
    const int flags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC;
    fd_ = direct ? ::open(name_.c_str(), flags | O_DIRECT, 0600) : -1;
    direct_ = fd_ >= 0;
    if (fd_ < 0 && (!direct || errno == EINVAL)) fd_ = ::open(name_.c_str(), flags, 0600);  // e.g. tmpfs
    if (fd_ < 0 && (errno != EEXIST || attempt > 100)) {
      invalid(key + ": cannot create a file in " + dir + ": " + std::strerror(errno) +
              " (expected a writable directory)");
    }
  }
  ::unlink(name_.c_str());
}

SwapFile::~SwapFile() {
  if (fd_ >= 0) ::close(fd_);
}

void SwapFile::reserve(uint64_t bytes) {
  struct statvfs fs {};
  struct stat st {};
  if (::fstatvfs(fd_, &fs) != 0 || ::fstat(fd_, &st) != 0) {
    sdk::fail(STRATA_ERR_INTERNAL, key_ + ": cannot read the free space of " + dir_ + ": " +
                                       std::strerror(errno));
  }
  // Blocks this file holds already are reused.
  const uint64_t available = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize +
                             static_cast<uint64_t>(st.st_blocks) * 512u;
  auto full = [&](const char* why) {
    invalid(key_ + ": " + dir_ + " has " + format_bytes(available) + " (" +
            std::to_string(available) + " bytes) available but this rank's " + holds_ + " needs " +
            format_bytes(bytes) + " (" + std::to_string(bytes) + " bytes)" + why);
  };
  if (bytes > available) full("");
  if (::ftruncate(fd_, 0) != 0) {
    sdk::fail(STRATA_ERR_INTERNAL, key_ + ": cannot truncate the " + holds_ + " file in " + dir_ + ": " +
                                       std::strerror(errno));
  }
  size_ = 0;
  if (bytes == 0) return;
  const int rc = ::posix_fallocate(fd_, 0, static_cast<off_t>(bytes));
  if (rc == ENOSPC) full(" (the drive filled up while the file was being allocated)");
  if (rc != 0) {
    sdk::fail(STRATA_ERR_INTERNAL, key_ + ": cannot allocate " + format_bytes(bytes) +
                                       " for the " + holds_ + " file in " + dir_ + ": " +
                                       std::strerror(rc));
  }
  size_ = bytes;
}

}  // namespace strata::offload
