// consolidate: every parameter (and with --optimizer every other slot) as one fp32 tensor of a
// safetensors file. Streaming: the header comes from the metadata alone, then each tensor is
// assembled from the blocks that cover it, read straight into place, and written out, so memory
// holds one parameter at a time, never the model.
#include "checkpoint/io_detail.hpp"
#include "error.hpp"
#include "tool.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

namespace strata::ckpt::tool {

namespace {

// A block of one rank file that holds part of a parameter.
struct Piece {
  uint32_t rank = 0;
  uint32_t range = 0;
  uint64_t offset = 0;
  uint64_t count = 0;
};

// For each parameter, the ranks' ranges that hold it, by offset; an error if any element is in no
// rank's file (overlaps, as with replicated state, are fine: any copy will do).
std::vector<std::vector<Piece>> pieces_by_param(const Metadata& meta, const std::string& tag_dir) {
  std::vector<std::vector<Piece>> pieces(meta.params.size());
  for (size_t rank = 0; rank < meta.ranks.size(); ++rank) {
    const std::vector<Range>& ranges = meta.ranks[rank].ranges;
    for (size_t i = 0; i < ranges.size(); ++i) {
      pieces[ranges[i].param].push_back(
          {static_cast<uint32_t>(rank), static_cast<uint32_t>(i), ranges[i].offset, ranges[i].count});
    }
  }
  for (size_t p = 0; p < pieces.size(); ++p) {
    std::sort(pieces[p].begin(), pieces[p].end(), [](const Piece& a, const Piece& b) { return a.offset < b.offset; });
    uint64_t covered = 0;
    for (const Piece& piece : pieces[p]) {
      if (piece.offset > covered) break;
      covered = std::max(covered, piece.offset + piece.count);
    }
    if (covered < meta.params[p].count) {
      detail::bad_file(tag_dir + "/" + kMetadataFile,
                       "parameter " + meta.params[p].name + ": elements from " + std::to_string(covered) +
                           " on are in no rank's file (" + std::to_string(meta.params[p].count) + " elements)");
    }
  }
  return pieces;
}

// OUT.tmp, renamed over OUT only once complete; removed if anything fails.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path) : path_(path), tmp_(path + ".tmp") {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) detail::io_failure(tmp_, "cannot create");
  }
  ~OutputFile() {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(tmp_.c_str());
    }
  }
  void write(const void* data, uint64_t bytes) { detail::write_fully(fd_, data, bytes, tmp_); }
  void commit() {
    if (::fsync(fd_) != 0) detail::io_failure(tmp_, "fsync failed");
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0 || ::rename(tmp_.c_str(), path_.c_str()) != 0) {
      ::unlink(tmp_.c_str());
      detail::io_failure(path_, "cannot finish writing");
    }
  }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
};

}  // namespace

int consolidate(const std::string& path, const std::string& out, bool with_optimizer) {
  const std::string tag_dir = resolve_tag_dir(path);
  const Metadata meta = read_metadata(tag_dir);
  const std::vector<std::vector<Piece>> pieces = pieces_by_param(meta, tag_dir);

  std::vector<Tensor> tensors;
  uint64_t largest = 0;
  for (size_t p = 0; p < meta.params.size(); ++p) {
    const size_t slots = with_optimizer ? meta.slots.size() : 1;
    for (size_t s = 0; s < slots; ++s) {
      const std::string name = s == 0 ? meta.params[p].name : meta.params[p].name + "." + meta.slots[s];
      tensors.push_back({name, static_cast<uint32_t>(p), static_cast<uint32_t>(s), meta.params[p].count, 0});
    }
    largest = std::max(largest, meta.params[p].count);
  }
  std::vector<std::pair<std::string, std::string>> info = {
      {"format", "pt"}, {"source", "strata-checkpoint"}, {"format_version", std::to_string(meta.format_version)}};
  if (const auto v = meta.document.find("strata_version"); v != meta.document.end() && v->is_string()) {
    info.emplace_back("strata_version", v->get<std::string>());
  }
  const std::string header = safetensors_header(tensors, info, out);

  // Every rank file's header and index are checked before anything is written.
  std::vector<std::unique_ptr<ShardReader>> readers;
  for (size_t r = 0; r < meta.ranks.size(); ++r) {
    readers.push_back(std::make_unique<ShardReader>(tag_dir + "/" + meta.ranks[r].file, meta, static_cast<int>(r)));
  }
  OutputFile file(out);
  file.write(header.data(), header.size());
  std::vector<float> buffer(largest);
  for (const Tensor& t : tensors) {
    // Each block is read straight into its place in the tensor (and its checksum checked).
    for (const Piece& piece : pieces[t.param]) {
      readers[piece.rank]->read_block(piece.range, t.slot, buffer.data() + piece.offset);
    }
    file.write(buffer.data(), t.count * 4);
  }
  file.commit();
  std::cout << out << ": " << tensors.size() << " tensors from " << meta.params.size() << " parameters of "
            << tag_dir << "\n";
  return 0;
}

}  // namespace strata::ckpt::tool
