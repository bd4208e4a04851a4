#include "manifest/manifest_text.hpp"

#include "manifest/manifest_detail.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string_view>
#include <vector>

namespace strata::rt {
namespace {

using nlohmann::json;
using manifest_detail::fail;
using manifest_detail::shortened;

std::string size_limit_text() {
  return "the limit is " + std::to_string(kMaxManifestBytes) + " bytes (16 MiB)";
}

// "at line 3, column 14" for a byte offset into `text` (lines and columns count from 1).
std::string position_of(const std::string& text, size_t offset) {
  offset = std::min(offset, text.size());
  const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
  const size_t line_start = offset == 0 ? 0 : text.rfind('\n', offset - 1);
  const size_t column = line_start == std::string::npos ? offset + 1 : offset - line_start;
  return "at line " + std::to_string(line) + ", column " + std::to_string(column);
}

// A pointer for a message: the root has an empty one.
std::string located(const std::string& path) { return path.empty() ? "(top level)" : shortened(path, 160); }

// Walks the document without building it, keeping the JSON path of the value being read and the
// nesting depth. It stops at the first container past kMaxManifestDepth or at the first error,
// so the message can say where.
class BoundsCheck final : public json::json_sax_t {
 public:
  enum class Stop { none, too_deep, syntax, out_of_range };

  Stop stop() const { return stop_; }
  const std::string& detail() const { return detail_; }
  size_t position() const { return position_; }
  const std::string& token() const { return token_; }

  // The JSON pointer of the value being read when the walk stopped.
  std::string path() const {
    json::json_pointer p;
    for (const Frame& f : frames_) {
      if (f.array) {
        p /= f.count;
      } else if (f.has_key) {
        p /= shortened(f.key, 64);
      } else {
        break;  // stopped before this object's first key
      }
    }
    return p.to_string();
  }

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    frames_.back().key = k;
    frames_.back().has_key = true;
    return true;
  }
  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& e) override {
    stop_ = dynamic_cast<const json::out_of_range*>(&e) != nullptr ? Stop::out_of_range : Stop::syntax;
    detail_ = e.what();
    position_ = position;
    token_ = last_token;
    return false;
  }

 private:
  struct Frame {
    bool array = false;
    size_t count = 0;  // array elements read so far: the index of the next one
    bool has_key = false;
    std::string key;
  };

  bool value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().count;
    return true;
  }
  bool open(bool array) {
    if (frames_.size() >= kMaxManifestDepth) {
      stop_ = Stop::too_deep;
      return false;
    }
    frames_.push_back(Frame{array, 0, false, {}});
    return true;
  }
  bool close() {
    frames_.pop_back();
    return value();
  }

  std::vector<Frame> frames_;
  Stop stop_ = Stop::none;
  std::string detail_;
  size_t position_ = 0;
  std::string token_;
};

// nlohmann's message reads "[json.exception.parse_error.101] parse error at line 3, column 5:
// <reason>"; keep the position and reason, drop the exception id.
std::string syntax_detail(const std::string& what) {
  const auto at = what.find("parse error");
  return at == std::string::npos ? ": " + what : what.substr(at + std::string_view("parse error").size());
}

}  // namespace

std::string read_manifest_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path + ": cannot open manifest: Is a directory");
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!in) fail(path + ": cannot open manifest: " + std::strerror(errno));
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxManifestBytes) {
    fail(path + ": manifest is " + std::to_string(size) + " bytes; " + size_limit_text());
  }
  // Read in chunks and stop at the limit: the size above is only a hint (a device, a pipe or a
  // file still growing can hold more).
  std::string text;
  char chunk[65536];
  size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof chunk, in.get())) > 0) {
    text.append(chunk, got);
    if (text.size() > kMaxManifestBytes) {
      fail(path + ": manifest is more than " + std::to_string(kMaxManifestBytes) + " bytes; " +
           size_limit_text());
    }
  }
  if (std::ferror(in.get())) fail(path + ": cannot read manifest: " + std::strerror(errno));
  return text;
}

json parse_manifest_text(const std::string& text, const std::string& where) {
  if (text.size() > kMaxManifestBytes) {
    fail(where + ": manifest is " + std::to_string(text.size()) + " bytes; " + size_limit_text());
  }
  BoundsCheck check;
  json::sax_parse(text, &check);
  switch (check.stop()) {
    case BoundsCheck::Stop::none: break;
    case BoundsCheck::Stop::too_deep:
      fail(where + ": " + located(check.path()) + ": nested more than " +
           std::to_string(kMaxManifestDepth) + " levels deep (objects and arrays); a manifest " +
           "needs a handful");
    case BoundsCheck::Stop::out_of_range:
      // The only out_of_range error of nlohmann's parser: a number beyond a double's range, such
      // as 1e400, which its message names but without the key. The parser stops just past the
      // number; its first character is where the user should look.
      fail(where + ": " + located(check.path()) + ": number " + shortened(check.token(), 40) +
           " is out of range (beyond a double's largest, about 1.8e308) " +
           position_of(text, check.position() - std::min(check.position(), check.token().size())));
    case BoundsCheck::Stop::syntax: fail(where + ": malformed JSON" + syntax_detail(check.detail()));
  }
  // Within bounds and well-formed: building the document now cannot fail or recurse too deep.
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    fail(where + ": malformed JSON" + syntax_detail(e.what()));
  }
}

}  // namespace strata::rt
