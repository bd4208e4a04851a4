#include <strata_common/shm_segment.hpp>

#include <strata/plugin.hpp>

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <utility>

namespace strata::common::shm {
namespace {

[[noreturn]] void fail(const std::string& what, int error) {
  sdk::fail(STRATA_ERR_COMM, "shared-memory segment: " + what + ": " + std::strerror(error));
}

void* map(int fd, size_t bytes, const std::string& name) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) fail("mmap of " + name + " (" + std::to_string(bytes) + " bytes)", errno);
  return data;
}

bool process_exists(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

std::string segment_prefix() { return "strata-shm-" + std::to_string(getuid()) + "-"; }

ShmSegment ShmSegment::create(size_t bytes) {
  // Unique within the process (a counter) and across processes (the pid).
  static std::atomic<unsigned> next{0};
  ShmSegment segment;
  // Appended, not "/" + ...: GCC 12 at -O3 flags that with a false -Wrestrict.
  segment.name_ = '/';
  segment.name_ += segment_prefix();
  segment.name_ += std::to_string(getpid()) + "-" + std::to_string(next.fetch_add(1));
  const int fd = shm_open(segment.name_.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd < 0) fail("shm_open(" + segment.name_ + ", O_CREAT | O_EXCL)", errno);
  segment.linked_ = true;
  segment.size_ = bytes;
  // posix_fallocate returns the error instead of setting errno.
  int rc = ftruncate(fd, static_cast<off_t>(bytes)) == 0 ? 0 : errno;
  if (rc == 0) rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    close(fd);
    fail("reserving " + std::to_string(bytes) + " bytes for " + segment.name_ +
             " (is /dev/shm large enough? `df -h /dev/shm`)",
         rc);
  }
  try {
    segment.data_ = map(fd, bytes, segment.name_);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  return segment;
}

ShmSegment ShmSegment::open(const std::string& name, size_t bytes) {
  ShmSegment segment;
  segment.name_ = name;
  const int fd = shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) fail("shm_open(" + name + ") (is /dev/shm shared by the ranks of this host?)", errno);
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<size_t>(st.st_size) < bytes) {
    close(fd);
    sdk::fail(STRATA_ERR_COMM, "shared-memory segment: " + name + " is smaller than the " +
                                   std::to_string(bytes) + " bytes its creator made");
  }
  segment.size_ = bytes;
  try {
    segment.data_ = map(fd, bytes, name);
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  return segment;
}

ShmSegment::ShmSegment(ShmSegment&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      name_(std::move(other.name_)),
      linked_(std::exchange(other.linked_, false)) {}

ShmSegment& ShmSegment::operator=(ShmSegment&& other) noexcept {
  if (this != &other) {
    this->~ShmSegment();
    new (this) ShmSegment(std::move(other));
  }
  return *this;
}

ShmSegment::~ShmSegment() {
  if (data_ != nullptr) munmap(data_, size_);
  unlink();
}

void ShmSegment::unlink() {
  if (!linked_) return;
  shm_unlink(name_.c_str());
  linked_ = false;
}

int remove_stale_segments() {
  DIR* dir = opendir("/dev/shm");
  if (dir == nullptr) return 0;
  const std::string prefix = segment_prefix();
  int removed = 0;
  while (const dirent* entry = readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    // "<prefix><pid>-<n>"
    const pid_t pid = static_cast<pid_t>(std::strtol(name.c_str() + prefix.size(), nullptr, 10));
    if (pid <= 0 || process_exists(pid)) continue;
    if (shm_unlink(("/" + name).c_str()) == 0) ++removed;
  }
  closedir(dir);
  return removed;
}

}  // namespace strata::common::shm
