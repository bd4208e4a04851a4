// strata_common/config_reader.hpp — how the tree's plugins read their JSON config: key by key, so
// that every error names the key's path and what was expected, and leftover keys (typos) are
// refused with the nearest known one instead of being ignored. One reader for every plugin (the
// offload plugin's, grown), one message shape:
//   <path of the key>: expected <what>, got <value as written>
//   <path of the key>: unknown key[<context>][; expected one of a, b, c][; did you mean 'b'?]
// where a key's path is its object's path, the separator and the key: "offload_optimizer.device"
// (separator ".") or "comm config: chunk_bytes" (separator ": "); a reader of the root object
// (path "") names its keys bare: "dtype", and a block in it "fp16.loss_scale".
// Library strata_common_config (plugins/common, never installed). Every error is an sdk::Error
// with STRATA_ERR_INVALID_ARGUMENT. A reader is used by one thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <strata_common/config_numbers.hpp>
#include <utility>
#include <vector>

namespace strata::common::config {

using nlohmann::json;

// `text` as a JSON object; NULL or "" is {}. Errors: "<context>: not valid JSON: <parser's
// text>", "<context>: expected a JSON object, got <value>". `not_json` rewords the first for a
// plugin whose users already match another wording (zero's "invalid JSON").
json parse_object(const char* text, const std::string& context,
                  const char* not_json = "not valid JSON");

[[noreturn]] void invalid(const std::string& path, const std::string& what);

// "a, b, c".
std::string join(const std::vector<std::string>& words);
// "a, b or c": the values a key may take.
std::string either(const std::vector<std::string>& words);
std::string lower(std::string s);

// A value as written, shortened to 80 characters: one bad value must not flood the message.
std::string shown(const json& value);

// What a key whose value is null means: the same as an absent key (DeepSpeed's blocks, where
// None means the default), or a value like any other, refused by the typed readers ("got null").
enum class Nulls { absent, refused };

// Reads the keys of one JSON object by name, remembering which were asked for, so that whatever
// is left over afterwards can be reported as unknown.
class ObjectReader {
 public:
  // `object` may be null (treated as {}); anything else that is not an object is an error.
  // `object` must outlive the reader. `strings` applies to number() and whole_number().
  ObjectReader(const json& object, std::string path, std::string separator = ".",
               Nulls nulls = Nulls::absent, NumberStrings strings = NumberStrings::refused);
  // A temporary would dangle: the reader keeps a reference.
  ObjectReader(json&&, std::string, std::string = ".", Nulls = Nulls::absent,
               NumberStrings = NumberStrings::refused) = delete;

  // The key's value; NULL when absent (or null, with Nulls::absent). Marks the key as known.
  const json* find(const std::string& key);
  std::string path(const std::string& key) const {
    return path_.empty() ? key : path_ + separator_ + key;
  }
  [[noreturn]] void invalid(const std::string& key, const std::string& what) const {
    config::invalid(path(key), what);
  }

  // A number (number_in) for which `ok` holds.
  double number(const std::string& key, double fallback, bool (*ok)(double), const char* expected);
  double positive(const std::string& key, double fallback);
  double non_negative(const std::string& key, double fallback);
  // A JSON integer (not a float) in [least, most].
  uint64_t unsigned_integer(const std::string& key, uint64_t fallback, uint64_t least,
                            uint64_t most, const std::string& expected);
  // A whole number (whole_number_in: 5e8 counts) in [least, most].
  int64_t whole_number(const std::string& key, int64_t fallback, int64_t least, int64_t most,
                       const std::string& expected);
  bool boolean(const std::string& key, bool fallback);
  // true, false or "auto" (absent reads as "auto": nullopt), for a switch whose default the plugin
  // decides per job: `expected true, false or "auto", got ...`.
  std::optional<bool> boolean_or_auto(const std::string& key);
  // One of `allowed` (exactly as written): `expected "a" or "b", got ...`. `synonyms` are other
  // spellings of allowed values ({"half", "fp16"}), accepted as that value but not listed.
  std::string choice(const std::string& key, const std::string& fallback,
                     const std::vector<std::string>& allowed,
                     const std::vector<std::pair<std::string, std::string>>& synonyms = {});
  // A non-empty string.
  std::string text(const std::string& key, const std::string& fallback, const char* expected);
  // The object at `key`, read by a reader of its own (path path(key), this reader's Nulls and
  // NumberStrings); absent reads as {}. Its keys are its own to reject.
  ObjectReader object(const std::string& key);

  // DeepSpeed's Optional[...] fields, in a reader that refuses null elsewhere: null is accepted
  // (as absent: nullopt, {}) whatever the reader's Nulls, and the message names it:
  // "expected true, false or null", `expected "a", "b" or null`, "expected an object or null".
  std::optional<bool> boolean_or_null(const std::string& key);
  std::optional<std::string> choice_or_null(const std::string& key,
                                            const std::vector<std::string>& allowed);
  ObjectReader object_or_null(const std::string& key);

  // Rejects every key that no find() asked for, naming the accepted ones (when there are at most
  // 16: a longer list would bury the rest of the message) and the nearest (within two edits).
  // `context` follows "unknown key" (e.g. " for lion").
  void reject_unknown(const std::string& context = "") const;

 private:
  // The key's value; NULL when absent or null, whatever the reader's Nulls.
  const json* find_unless_null(const std::string& key);

  const json& object_;
  std::string path_;
  std::string separator_;
  Nulls nulls_;
  NumberStrings strings_;
  std::vector<std::string> known_;
};

}  // namespace strata::common::config
