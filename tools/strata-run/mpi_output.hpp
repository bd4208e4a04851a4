// Open MPI's --tag-output stream, cut back into whole lines per rank.
//
// mpirun forwards a rank's output in chunks as the rank wrote them (Open MPI 4.1,
// orte_iof_base_write_output): it puts the tag "[JOB,RANK]<stdout>:" (or <stderr>, <stddiag>) at
// the start of each chunk and after each '\n' inside it, and adds no '\n' to a chunk that ends
// mid-line. So a rank's partial line is followed directly by another rank's tag on the same line
// of mpirun's output ("[1,0]<stdout>:ab[1,1]<stdout>:xy\n[1,0]<stdout>:cd\n"). The parser keeps
// a pending line per (rank, stream) and emits only whole ones, or pieces of kMaxLineBytes (64 KiB,
// output.hpp) of a longer one; mpirun's own untagged lines (its error banners) come out unchanged.
// A rank that prints a tag-shaped text itself is misread; a rank's partial line followed by one of
// mpirun's own messages on the same pipe is joined to it. A tag's numbers have at most 9 digits.
#pragma once

#include "output.hpp"
#include "rank_lines.hpp"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace strata::run {


// The rank an Open MPI 4.1 banner line names as the job's first failure, if it is one of
// "mpirun noticed that process rank 1 with PID 0 on node vm exited on signal 9 (Killed)." or
// "  Process name: [[2107,1],2]" (after "The first process to do so was:").
std::optional<int> failed_rank_in_mpirun_line(std::string_view line);

class MpiOutputParser : public RankLineParser {
 public:
  // pipe_is_stdout: which of mpirun's pipes this parser reads (the stream of untagged lines).
  explicit MpiOutputParser(bool pipe_is_stdout);

  // Calls on_line for every line completed by `data` (any cut of the stream, even inside a tag).
  void feed(std::string_view data, const OnLine& on_line) override;
  // At EOF: every pending partial line is still a line (untagged first, then by rank).
  void finish(const OnLine& on_line) override;

 private:
  using Source = std::pair<int, bool>;  // (rank, is_stdout); rank -1: mpirun itself

  void consume(std::string_view data, const OnLine& on_line);
  void add_text(std::string_view text, const OnLine& on_line);  // current_'s text, '\n' included
  static LineSplitter::OnLine as_mpi_lines(const Source& source, const OnLine& on_line);

  const Source untagged_;
  Source current_;                        // whose text the stream carries now
  std::map<Source, LineSplitter> lines_;  // each source's partial line
  std::string held_;                      // a possible tag cut off by the end of a read (short)
};

}  // namespace strata::run
