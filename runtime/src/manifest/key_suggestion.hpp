// "Did you mean ...?" for a misspelt key: the closest known key by edit distance.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace strata::rt {

// Optimal string alignment distance (Levenshtein plus adjacent transpositions, so "szie" is one
// edit from "size"), compared case-insensitively.
size_t edit_distance(std::string_view a, std::string_view b);

// The known key closest to `key`, if it is close enough to be a plausible typo: at most one edit
// for keys of up to 4 characters, two up to 12, three beyond. Ties go to the earlier entry.
std::optional<std::string> closest_key(std::string_view key, std::span<const std::string_view> known);

// "; did you mean train_batch_size?" or "" when nothing is close: ready to append to a message.
std::string did_you_mean(std::string_view key, std::span<const std::string_view> known);

}  // namespace strata::rt
