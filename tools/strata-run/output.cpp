#include "output.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace strata::run {

void LineSplitter::feed(std::string_view data, const OnLine& on_line) {
  while (!data.empty()) {
    const size_t newline = data.find('\n');
    std::string_view text = data.substr(0, newline);
    while (pending_.size() + text.size() > kMaxLineBytes) {
      const size_t room = kMaxLineBytes - pending_.size();  // 0 when pending_ is already full
      emit(text.substr(0, room), on_line);
      text.remove_prefix(room);
    }
    if (newline == std::string_view::npos) {
      pending_.append(text);
      return;
    }
    emit(text, on_line);
    data.remove_prefix(newline + 1);
  }
}

void LineSplitter::finish(const OnLine& on_line) {
  if (!pending_.empty()) emit({}, on_line);
}

void LineSplitter::emit(std::string_view tail, const OnLine& on_line) {
  if (pending_.empty()) {
    on_line(tail);
    return;
  }
  pending_.append(tail);
  on_line(pending_);
  pending_.clear();
}

std::string rank_prefix(int rank, bool enabled) {
  return enabled ? "[" + std::to_string(rank) + "] " : std::string();
}

bool read_available(int fd, const std::function<void(std::string_view data)>& on_data) {
  char buffer[65536];
  for (int reads = 0; reads < 16;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) {
      on_data(std::string_view(buffer, static_cast<size_t>(n)));
      ++reads;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
  return true;  // more may be waiting: poll() says so on the next round
}

void write_prefixed_line(int fd, std::string_view prefix, std::string_view line) {
  std::string out;
  out.reserve(prefix.size() + line.size() + 1);
  out.append(prefix).append(line).push_back('\n');
  std::string_view rest = out;
  while (!rest.empty()) {
    const ssize_t n = write(fd, rest.data(), rest.size());
    if (n >= 0) {
      rest.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN) {
      // A non-blocking stdout that is full: wait as a blocking one would (a closed reader ends the
      // wait with POLLERR, and the next write() fails with EPIPE). poll()'s EINTR: just retry.
      pollfd writable = {fd, POLLOUT, 0};
      poll(&writable, 1, -1);
      continue;
    }
    return;  // a closed stdout (strata-run | head): drop the output, keep supervising the ranks
  }
}

}  // namespace strata::run
