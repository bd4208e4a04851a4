// Output of the ranks, for both backends: each stdout/stderr pipe is cut into whole lines and each
// line is written with the rank's prefix in one write(), so lines of different ranks never
// interleave mid-line. (The mpi backend's lines come from mpirun's tagged stream: mpi_output.hpp.)
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace strata::run {

class LineSplitter {
 public:
  using OnLine = std::function<void(std::string_view line)>;  // without the '\n'

  // Calls on_line for every line completed by `data`.
  void feed(std::string_view data, const OnLine& on_line);
  // At EOF: a last line without '\n' is still a line.
  void finish(const OnLine& on_line);

 private:
  std::string pending_;
};

// What goes before rank R's lines: "[R] ", or nothing (--no-rank-prefix).
std::string rank_prefix(int rank, bool enabled);

// Reads what the non-blocking fd holds now, passing each chunk to on_data. Returns true when the
// pipe is only empty for now, false at EOF (or a read error: the pipe is done either way).
bool read_available(int fd, const std::function<void(std::string_view data)>& on_data);

// Writes "<prefix><line>\n" to fd in a single write where possible (and loops on short writes).
void write_prefixed_line(int fd, std::string_view prefix, std::string_view line);

}  // namespace strata::run
