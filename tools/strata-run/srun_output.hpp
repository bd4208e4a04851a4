// srun --label's output cut back into lines per task (a task is a rank: SLURM_PROCID).
//
// srun writes a task's output as messages of at most kSrunMessageBytes, each as "<id>: <text>\n"
// with the id right-aligned to the width of the largest one ("  3: ", " 12: "), on the pipe of the
// task's stream: a longer line arrives as several full messages and a last shorter one, which the
// parser joins again (so a line of exactly kSrunMessageBytes waits for the task's next one). srun's
// own messages ("srun: error: ...") come unmarked, and slurmstepd's ("slurmstepd-node: error: ***
// STEP 5.0 ... CANCELLED ***") marked as task 0's: both are the launcher's lines.
#pragma once

#include "output.hpp"
#include "rank_lines.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace strata::run {

inline constexpr size_t kSrunMessageBytes = 1024;  // Slurm's SLURM_IO_MAX_MSG_LEN

class SrunOutputParser : public RankLineParser {
 public:
  explicit SrunOutputParser(bool pipe_is_stdout) : is_stdout_(pipe_is_stdout) {}
  void feed(std::string_view data, const OnLine& on_line) override;
  void finish(const OnLine& on_line) override;

 private:
  LineSplitter::OnLine as_rank_lines(const OnLine& on_line);
  void emit(std::optional<int> rank, std::string_view text, const OnLine& on_line) const;

  bool is_stdout_;
  LineSplitter lines_;
  std::map<int, std::string> pending_;  // a task's line that srun split, until its last piece
};

// A task srun names as failed in one of its own lines, and the code it ended with:
// "srun: error: node1: task 3: Exited with exit code 7" (7), "srun: error: node1: task 2: Killed"
// (128 + SIGKILL). A range ("tasks 0-2: Terminated") names its first task.
struct SrunTaskFailure {
  int rank = 0;
  std::optional<int> exit_code;  // none when srun's words name no code or signal strata-run knows
};
std::optional<SrunTaskFailure> failed_task_in_srun_line(std::string_view line);

}  // namespace strata::run
