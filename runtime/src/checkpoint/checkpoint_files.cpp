#include "checkpoint/checkpoint_files.hpp"

#include "checkpoint/format.hpp"
#include "error.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <system_error>

namespace strata::rt {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void fail(const std::string& what, const std::error_code& ec) {
  throw Error(STRATA_ERR_INTERNAL, what + ": " + ec.message());
}

}  // namespace

void check_checkpoint_tag(const std::string& tag, const char* call) {
  const bool bad = tag.empty() || tag == "." || tag == ".." || tag == ckpt::kLatestFile ||
                   tag.front() == '.' || tag.find('/') != std::string::npos ||
                   tag.find('\0') != std::string::npos;
  if (bad) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                std::string(call) + ": tag '" + tag + "' cannot name a checkpoint folder (expected "
                "a non-empty name without '/', not starting with '.', not 'latest')");
  }
}

std::string checkpoint_dir(const std::string& dir, const std::string& tag) {
  return (fs::path(dir) / tag).string();
}

std::string partial_checkpoint_dir(const std::string& dir, const std::string& tag) {
  return (fs::path(dir) / ("." + tag + ".partial")).string();
}

void prepare_partial_dir(const std::string& dir, const std::string& tag) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("cannot create checkpoint folder " + dir, ec);
  // Saves that were killed part-way leave their partial folders; none is in progress now (a save
  // waits for the one before it), so they go.
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::string_view suffix = ".partial";
    if (name.size() > suffix.size() + 1 && name.front() == '.' &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      std::error_code ignored;
      fs::remove_all(entry.path(), ignored);
    }
  }
  const std::string partial = partial_checkpoint_dir(dir, tag);
  fs::remove_all(partial, ec);
  if (ec) fail("cannot remove " + partial, ec);
  fs::create_directory(partial, ec);
  if (ec) fail("cannot create " + partial, ec);
}

void commit_checkpoint(const std::string& dir, const std::string& tag) {
  const std::string partial = partial_checkpoint_dir(dir, tag);
  const std::string final_dir = checkpoint_dir(dir, tag);
  std::error_code ec;
  // An older checkpoint of the same tag is moved aside first: a rename onto a non-empty folder
  // fails, and removing it first would leave no checkpoint of that tag if the job died between.
  const std::string replaced = (fs::path(dir) / ("." + tag + ".replaced")).string();
  const bool had_one = fs::exists(final_dir, ec);
  if (had_one) {
    fs::remove_all(replaced, ec);
    fs::rename(final_dir, replaced, ec);
    if (ec) fail("cannot move the older " + final_dir + " aside", ec);
  }
  fs::rename(partial, final_dir, ec);
  if (ec) fail("cannot rename " + partial + " to " + final_dir, ec);
  ckpt::fsync_dir(dir);
  ckpt::write_file_atomically((fs::path(dir) / ckpt::kLatestFile).string(), tag);
  if (had_one) fs::remove_all(replaced, ec);  // best effort: the new one is complete
}

std::string resolve_checkpoint_tag(const std::string& dir, const std::string& tag) {
  if (!tag.empty() && tag != ckpt::kLatestFile) return tag;
  const std::string latest = (fs::path(dir) / ckpt::kLatestFile).string();
  std::ifstream in(latest);
  if (!in) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                latest + ": cannot read it (" + errno_text() + "): no checkpoint in " + dir +
                    " has completed; give the tag's folder instead");
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string name = text.str();
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r' || name.back() == ' ')) {
    name.pop_back();
  }
  try {
    check_checkpoint_tag(name, "load");
  } catch (const Error&) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                latest + ": expected the name of a checkpoint folder, found '" + name + "'");
  }
  return name;
}

}  // namespace strata::rt
