// A launcher that starts every rank itself (mpirun, srun) and hands strata-run its ranks' output
// on its own two pipes, each line marked with the rank: the lines as strata-run reads them back.
#pragma once

#include <functional>
#include <optional>
#include <string_view>

namespace strata::run {

struct RankLine {
  std::optional<int> rank;  // the rank the launcher marked it with; none for the launcher's own lines
  bool is_stdout = true;    // the rank's stream; for the launcher's own lines, the pipe's
  std::string_view text;    // without the mark and '\n'
};

// Cuts one of the launcher's pipes back into RankLines (mpi_output.hpp: Open MPI's --tag-output;
// srun_output.hpp: srun's --label).
class RankLineParser {
 public:
  using OnLine = std::function<void(const RankLine& line)>;
  virtual ~RankLineParser() = default;
  // Calls on_line for every line completed by `data`, wherever the pipe's reads cut the stream.
  virtual void feed(std::string_view data, const OnLine& on_line) = 0;
  // At EOF: every pending partial line is still a line.
  virtual void finish(const OnLine& on_line) = 0;
};

}  // namespace strata::run
