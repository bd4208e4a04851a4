#include "srun_output.hpp"

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

LineSplitter::OnLine SrunOutputParser::as_rank_lines(const OnLine& on_line) const {
  return [this, &on_line](std::string_view text) {
    RankLine line;
    line.is_stdout = is_stdout_;
    line.text = text;
    if (const auto mark = task_mark(text)) {
      line.rank = mark->first;
      line.text = text.substr(mark->second);
    }
    on_line(line);
  };
}

void SrunOutputParser::feed(std::string_view data, const OnLine& on_line) { lines_.feed(data, as_rank_lines(on_line)); }

void SrunOutputParser::finish(const OnLine& on_line) { lines_.finish(as_rank_lines(on_line)); }

std::optional<int> failed_rank_in_srun_line(std::string_view line) {
  if (line.rfind("srun: error: ", 0) != 0) return std::nullopt;
  for (const std::string_view marker : {": task ", ": tasks "}) {
    const size_t at = line.find(marker);
    if (at == std::string_view::npos) continue;
    size_t i = at + marker.size();
    const size_t begin = i;
    int value = 0;
    while (i < line.size() && i - begin < 9 && line[i] >= '0' && line[i] <= '9') value = value * 10 + (line[i++] - '0');
    if (i > begin && i < line.size() && (line[i] == ':' || line[i] == '-' || line[i] == ',')) return value;
  }
  return std::nullopt;
}

}  // namespace strata::run
