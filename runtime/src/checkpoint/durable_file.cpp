// Making a finished file and its name survive a crash: fsync the file, rename it over the old
// name, fsync the folder that holds the name.
#include "checkpoint/format.hpp"
#include "checkpoint/io_detail.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace strata::ckpt {

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) detail::io_failure(dir, "cannot open folder to fsync it");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) detail::io_failure(dir, "fsync of folder failed");
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) detail::io_failure(tmp, "cannot create");
  try {
    detail::write_fully(fd, text.data(), text.size(), tmp);
    if (::fsync(fd) != 0) detail::io_failure(tmp, "fsync failed");
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) detail::io_failure(tmp, "close failed");
  if (::rename(tmp.c_str(), path.c_str()) != 0) detail::io_failure(path, "cannot rename " + tmp + " to it");
  const size_t slash = path.rfind('/');
  fsync_dir(slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash));
}

}  // namespace strata::ckpt
