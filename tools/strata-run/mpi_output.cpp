#include "mpi_output.hpp"

#include <array>
#include <cctype>

namespace strata::run {
namespace {

enum class TagMatch { complete, prefix, none };

struct Tag {
  TagMatch match = TagMatch::none;
  size_t length = 0;
  int rank = 0;
  bool is_stdout = true;
};

// Reads "[JOB,RANK]<stream>:" at the start of s. `prefix`: s ends before the tag could be told from
// text, so the caller must wait for more bytes.
Tag match_tag(std::string_view s) {
  constexpr std::array<std::string_view, 3> streams = {"stdout", "stderr", "stddiag"};
  Tag tag;
  size_t i = 1;  // s[0] is '['
  const auto digits = [&](char end) -> TagMatch {
    const size_t first = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      // Longer is no number Open MPI prints, and keeps both held_ short and stoi in range.
      if (++i - first > 9) return TagMatch::none;
    }
    if (i == s.size()) return TagMatch::prefix;
    if (i == first || s[i] != end) return TagMatch::none;
    ++i;
    return TagMatch::complete;
  };
  if (const TagMatch m = digits(','); m != TagMatch::complete) return {m};
  const size_t rank_begin = i;
  if (const TagMatch m = digits(']'); m != TagMatch::complete) return {m};
  const std::string_view rank = s.substr(rank_begin, i - 1 - rank_begin);
  for (const std::string_view stream : streams) {
    const std::string expected = "<" + std::string(stream) + ">:";
    const std::string_view rest = s.substr(i, expected.size());
    if (rest != std::string_view(expected).substr(0, rest.size())) continue;
    if (rest.size() < expected.size()) return {TagMatch::prefix};
    tag.match = TagMatch::complete;
    tag.length = i + expected.size();
    tag.rank = std::stoi(std::string(rank));
    tag.is_stdout = stream == "stdout";
    return tag;
  }
  return {TagMatch::none};
}

}  // namespace

MpiOutputParser::MpiOutputParser(bool pipe_is_stdout)
    : untagged_{-1, pipe_is_stdout}, current_(untagged_) {}

void MpiOutputParser::feed(std::string_view data, const OnLine& on_line) {
  // A tag held from the last read is completed a byte at a time (it is short), so the new chunk
  // itself is never copied.
  while (!held_.empty() && !data.empty()) {
    held_.push_back(data.front());
    data.remove_prefix(1);
    if (match_tag(held_).match == TagMatch::prefix) continue;
    const std::string decided = std::move(held_);
    held_.clear();
    consume(decided, on_line);  // a tag, or text (which may end in a new held "[")
  }
  consume(data, on_line);
}

void MpiOutputParser::consume(std::string_view data, const OnLine& on_line) {
  while (!data.empty()) {
    const size_t special = data.find_first_of("[\n");
    if (special == std::string_view::npos) {
      add_text(data, on_line);
      return;
    }
    if (data[special] == '\n') {
      add_text(data.substr(0, special + 1), on_line);
      current_ = untagged_;  // after a '\n' comes a tag, or one of mpirun's own lines
      data.remove_prefix(special + 1);
      continue;
    }
    add_text(data.substr(0, special), on_line);
    data.remove_prefix(special);
    const Tag tag = match_tag(data);
    if (tag.match == TagMatch::prefix) {
      held_ = std::string(data);
      return;
    }
    if (tag.match == TagMatch::none) {
      add_text(data.substr(0, 1), on_line);
      data.remove_prefix(1);
      continue;
    }
    current_ = {tag.rank, tag.is_stdout};
    data.remove_prefix(tag.length);
  }
}

void MpiOutputParser::finish(const OnLine& on_line) {
  const std::string held = std::move(held_);
  held_.clear();
  add_text(held, on_line);  // an unfinished tag at EOF was text after all
  for (auto& [source, lines] : lines_) lines.finish(as_mpi_lines(source, on_line));
  lines_.clear();
  current_ = untagged_;
}

void MpiOutputParser::add_text(std::string_view text, const OnLine& on_line) {
  if (!text.empty()) lines_[current_].feed(text, as_mpi_lines(current_, on_line));
}

LineSplitter::OnLine MpiOutputParser::as_mpi_lines(const Source& source, const OnLine& on_line) {
  return [source, &on_line](std::string_view text) {
    RankLine line;
    if (source.first >= 0) line.rank = source.first;
    line.is_stdout = source.second;
    line.text = text;
    on_line(line);
  };
}

std::optional<int> failed_rank_in_mpirun_line(std::string_view line) {
  const auto digits_after = [&](std::string_view marker) -> std::optional<int> {
    const size_t at = line.find(marker);
    if (at == std::string_view::npos) return std::nullopt;
    size_t i = at + marker.size();
    int value = 0;
    const size_t begin = i;
    while (i < line.size() && i - begin < 9 && line[i] >= '0' && line[i] <= '9') value = value * 10 + (line[i++] - '0');
    if (i == begin) return std::nullopt;
    return value;
  };
  if (line.find("mpirun noticed that process rank ") != std::string_view::npos) {
    return digits_after("process rank ");
  }
  const size_t name = line.find("Process name: [[");
  if (name == std::string_view::npos) return std::nullopt;
  line = line.substr(name);
  return digits_after("],");  // the jobid's "[[2107,1]," is followed by the rank
}

}  // namespace strata::run
