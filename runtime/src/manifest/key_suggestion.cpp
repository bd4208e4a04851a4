#include "manifest/key_suggestion.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace strata::rt {
namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

// Longer keys cannot be typos of a short known key, and comparing them costs O(n * m): a huge key
// (a manifest may hold megabytes in one string) is not compared at all.
constexpr size_t kLongestComparedKey = 256;

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the dynamic-programming table: the current one and the two before it (the
  // transposition looks two rows back).
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1])) {
        current[j] = std::min(current[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::optional<std::string> closest_key(std::string_view key, std::span<const std::string_view> known) {
  if (key.empty() || key.size() > kLongestComparedKey) return std::nullopt;
  const size_t limit = key.size() <= 4 ? 1 : key.size() <= 12 ? 2 : 3;
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  for (std::string_view candidate : known) {
    const size_t d = edit_distance(key, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = std::string(candidate);
    }
  }
  return best;
}

std::string did_you_mean(std::string_view key, std::span<const std::string_view> known) {
  const std::optional<std::string> best = closest_key(key, known);
  return best ? "; did you mean " + *best + "?" : "";
}

}  // namespace strata::rt
