#include "checkpoint/io_detail.hpp"
#include "tool.hpp"

#include <sys/stat.h>

namespace strata::ckpt::tool {

namespace {
bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}
}  // namespace

std::string resolve_tag_dir(const std::string& path) {
  if (exists(path + "/" + kMetadataFile)) return path;
  const std::string latest = path + "/" + kLatestFile;
  std::string tag;
  if (!detail::read_whole_file(latest, &tag)) {
    detail::bad_file(path, std::string("not a checkpoint: no ") + kMetadataFile + " (a tag folder) and no '" +
                               kLatestFile + "' file (a checkpoint folder)");
  }
  while (!tag.empty() && (tag.back() == '\n' || tag.back() == '\r' || tag.back() == ' ')) tag.pop_back();
  if (tag.empty() || tag.find('/') != std::string::npos || tag == "." || tag == "..") {
    detail::bad_file(latest, "expected the name of a tag folder next to it, got \"" + tag + "\"");
  }
  return path + "/" + tag;
}

}  // namespace strata::ckpt::tool
