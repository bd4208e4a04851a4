// srun --label's output cut back into lines per task (a task is a rank: SLURM_PROCID).
//
// srun writes each of a task's lines as "<id>: <text>", the id right-aligned to the width of the
// largest one ("  3: ", " 12: "), on the pipe of the task's stream; its own messages ("srun: error:
// ...", slurmstepd's "*** STEP ... CANCELLED ***") come unmarked. A line that a task itself begins
// with "N: " keeps it after the mark; an unmarked line is the launcher's.
#pragma once

#include "output.hpp"
#include "rank_lines.hpp"

#include <optional>
#include <string_view>

namespace strata::run {

class SrunOutputParser : public RankLineParser {
 public:
  explicit SrunOutputParser(bool pipe_is_stdout) : is_stdout_(pipe_is_stdout) {}
  void feed(std::string_view data, const OnLine& on_line) override;
  void finish(const OnLine& on_line) override;

 private:
  LineSplitter::OnLine as_rank_lines(const OnLine& on_line) const;

  bool is_stdout_;
  LineSplitter lines_;
};

// The task srun names as failed in one of its own lines: "srun: error: node1: task 2: Killed",
// "srun: error: node1: task 3: Exited with exit code 7" (a range "tasks 0-2" names its first).
std::optional<int> failed_rank_in_srun_line(std::string_view line);

}  // namespace strata::run
