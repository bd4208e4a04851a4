#include "srun_output.hpp"

#include <charconv>
#include <cstring>

namespace strata::run {
namespace {

// "<digits>: " after leading blanks, at most 9 digits: its value and the mark's length.
std::optional<std::pair<int, size_t>> task_mark(std::string_view line) {
  size_t i = line.find_first_not_of(' ');
  if (i == std::string_view::npos) return std::nullopt;
  const size_t begin = i;
  int value = 0;
  while (i < line.size() && i - begin < 9 && line[i] >= '0' && line[i] <= '9') value = value * 10 + (line[i++] - '0');
  if (i == begin || line.substr(i, 2) != ": ") return std::nullopt;
  return std::make_pair(value, i + 2);
}

}  // namespace

LineSplitter::OnLine SrunOutputParser::as_rank_lines(const OnLine& on_line) {
  return [this, &on_line](std::string_view text) {
    const auto mark = task_mark(text);
    if (!mark) return emit(std::nullopt, text, on_line);
    const int rank = mark->first;
    text.remove_prefix(mark->second);
    std::string& pending = pending_[rank];
    if (pending.empty() && text.rfind("slurmstepd", 0) == 0) {
      pending_.erase(rank);
      return emit(std::nullopt, text, on_line);
    }
    if (text.size() == kSrunMessageBytes && pending.size() + text.size() < kMaxLineBytes) {
      pending.append(text);  // a piece of a longer line: the rest follows in the task's next message
      return;
    }
    if (pending.empty()) {
      pending_.erase(rank);
      return emit(rank, text, on_line);
    }
    const std::string line = std::move(pending) + std::string(text);
    pending_.erase(rank);
    emit(rank, line, on_line);
  };
}

void SrunOutputParser::emit(std::optional<int> rank, std::string_view text, const OnLine& on_line) const {
  RankLine line;
  line.rank = rank;
  line.is_stdout = is_stdout_;
  line.text = text;
  on_line(line);
}

void SrunOutputParser::feed(std::string_view data, const OnLine& on_line) { lines_.feed(data, as_rank_lines(on_line)); }

void SrunOutputParser::finish(const OnLine& on_line) {
  lines_.finish(as_rank_lines(on_line));
  for (const auto& [rank, text] : pending_) emit(rank, text, on_line);
  pending_.clear();
}

std::optional<SrunTaskFailure> failed_task_in_srun_line(std::string_view line) {
  if (line.rfind("srun: error: ", 0) != 0) return std::nullopt;
  for (const std::string_view marker : {": task ", ": tasks "}) {
    const size_t at = line.find(marker);
    if (at == std::string_view::npos) continue;
    size_t i = at + marker.size();
    const size_t begin = i;
    int value = 0;
    while (i < line.size() && i - begin < 9 && line[i] >= '0' && line[i] <= '9') value = value * 10 + (line[i++] - '0');
    if (i == begin || i == line.size() || (line[i] != ':' && line[i] != '-' && line[i] != ',')) continue;
    SrunTaskFailure failure{value, std::nullopt};
    const size_t colon = line.find(": ", i);
    if (colon == std::string_view::npos) return failure;
    std::string_view words = line.substr(colon + 2);
    constexpr std::string_view core = " (core dumped)";
    if (words.size() > core.size() && words.substr(words.size() - core.size()) == core) {
      words.remove_suffix(core.size());
    }
    constexpr std::string_view exited = "Exited with exit code ";
    if (words.rfind(exited, 0) == 0) {
      int code = 0;
      const auto [end, ec] = std::from_chars(words.data() + exited.size(), words.data() + words.size(), code);
      if (ec == std::errc() && end == words.data() + words.size()) failure.exit_code = code;
      return failure;
    }
    // Otherwise srun names the signal as strsignal() does ("Killed", "Terminated", "Segmentation fault").
    for (int sig = 1; sig < 65; ++sig) {
      const char* text = strsignal(sig);
      if (text != nullptr && words == text) {
        failure.exit_code = 128 + sig;
        break;
      }
    }
    return failure;
  }
  return std::nullopt;
}

}  // namespace strata::run
