#include "output.hpp"

#include <unistd.h>

#include <cerrno>

namespace strata::run {

void LineSplitter::feed(std::string_view data, const OnLine& on_line) {
  while (!data.empty()) {
    const auto newline = data.find('\n');
    if (newline == std::string_view::npos) {
      pending_.append(data);
      return;
    }
    if (pending_.empty()) {
      on_line(data.substr(0, newline));
    } else {
      pending_.append(data.substr(0, newline));
      on_line(pending_);
      pending_.clear();
    }
    data.remove_prefix(newline + 1);
  }
}

void LineSplitter::finish(const OnLine& on_line) {
  if (pending_.empty()) return;
  on_line(pending_);
  pending_.clear();
}

std::string rank_prefix(int rank, bool enabled) {
  return enabled ? "[" + std::to_string(rank) + "] " : std::string();
}

bool read_available(int fd, const std::function<void(std::string_view data)>& on_data) {
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) {
      on_data(std::string_view(buffer, static_cast<size_t>(n)));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

void write_prefixed_line(int fd, std::string_view prefix, std::string_view line) {
  std::string out;
  out.reserve(prefix.size() + line.size() + 1);
  out.append(prefix).append(line).push_back('\n');
  std::string_view rest = out;
  while (!rest.empty()) {
    const ssize_t n = write(fd, rest.data(), rest.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // a closed stdout (strata-run | head): drop the output, keep supervising the ranks
    }
    rest.remove_prefix(static_cast<size_t>(n));
  }
}

}  // namespace strata::run
