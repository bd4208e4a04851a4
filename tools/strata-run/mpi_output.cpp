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
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == s.size()) return TagMatch::prefix;
    if (i == first || s[i] != end) return TagMatch::none;
    ++i;
    return TagMatch::complete;
  };
  if (const TagMatch m = digits(','); m != TagMatch::complete) return {m};
  const size_t rank_begin = i;
  if (const TagMatch m = digits(']'); m != TagMatch::complete) return {m};
  const std::string_view rank = s.substr(rank_begin, i - 1 - rank_begin);
  if (rank.size() > 9) return {TagMatch::none};  // not a rank Open MPI prints; keeps stoi in range
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
  std::string joined;
  if (!held_.empty()) {
    joined = std::move(held_) + std::string(data);
    held_.clear();
    data = joined;
  }
  while (!data.empty()) {
    const size_t special = data.find_first_of("[\n");
    pending_[current_].append(data.substr(0, special));
    if (special == std::string_view::npos) return;
    data.remove_prefix(special);
    if (data.front() == '\n') {
      emit(current_, on_line);
      pending_.erase(current_);
      current_ = untagged_;  // after a '\n' comes a tag, or one of mpirun's own lines
      data.remove_prefix(1);
      continue;
    }
    const Tag tag = match_tag(data);
    if (tag.match == TagMatch::prefix) {
      held_ = std::string(data);
      return;
    }
    if (tag.match == TagMatch::none) {
      pending_[current_].push_back('[');
      data.remove_prefix(1);
      continue;
    }
    current_ = {tag.rank, tag.is_stdout};
    data.remove_prefix(tag.length);
  }
}

void MpiOutputParser::finish(const OnLine& on_line) {
  pending_[current_].append(held_);  // an unfinished tag at EOF was text after all
  held_.clear();
  for (const auto& [source, text] : pending_) {
    if (!text.empty()) emit(source, on_line);
  }
  pending_.clear();
  current_ = untagged_;
}

void MpiOutputParser::emit(const Source& source, const OnLine& on_line) {
  MpiLine line;
  if (source.first >= 0) line.rank = source.first;
  line.is_stdout = source.second;
  line.text = pending_[source];
  on_line(line);
}

}  // namespace strata::run
