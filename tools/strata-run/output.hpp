// Output of the ranks, for both backends: each stdout/stderr pipe is cut into whole lines and each
// line is written with the rank's prefix in one write(), so lines of different ranks never
// interleave mid-line. (The mpi backend's lines come from mpirun's tagged stream: mpi_output.hpp.)
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace strata::run {

// The longest line strata-run holds back while it waits for the '\n': a rank that redraws a
// progress bar with '\r' and never ends the line would otherwise grow strata-run's memory without
// end. A longer line comes out in pieces of this size, each printed as a line of its own.
inline constexpr size_t kMaxLineBytes = 64 * 1024;

class LineSplitter {
 public:
  using OnLine = std::function<void(std::string_view line)>;  // without the '\n'

  // Calls on_line for every line completed by `data`, and for every kMaxLineBytes of a longer one.
  void feed(std::string_view data, const OnLine& on_line);
  // At EOF: a last line without '\n' is still a line.
  void finish(const OnLine& on_line);

 private:
  void emit(std::string_view tail, const OnLine& on_line);  // pending_ + tail as one line

  std::string pending_;  // never longer than kMaxLineBytes
};

// What goes before rank R's lines: "[R] ", or nothing (--no-rank-prefix).
std::string rank_prefix(int rank, bool enabled);

// Reads what the non-blocking fd holds now, passing each chunk to on_data, but at most 16 reads of
// 64 KiB: a rank that writes faster than strata-run's stdout drains would otherwise keep the caller
// from its loop (forwarding signals, reaping, deadlines) until the rank stops. Returns true while
// the pipe is open (empty for now, or more to read on the next call), false at EOF (or a read
// error: the pipe is done either way).
bool read_available(int fd, const std::function<void(std::string_view data)>& on_data);

// Writes "<prefix><line>\n" to fd in a single write where possible. Loops on short writes and, on a
// non-blocking fd that is full, waits until it can take more; drops the rest only on an error
// (a closed stdout).
void write_prefixed_line(int fd, std::string_view prefix, std::string_view line);

}  // namespace strata::run
