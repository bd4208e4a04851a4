// verify: opens every rank file (header and index checks) and reads every block (checksum
// checks). One line per file; exit 1 if any file failed.
#include "error.hpp"
#include "tool.hpp"

#include <algorithm>
#include <iostream>

namespace strata::ckpt::tool {

int verify(const std::string& path) {
  const std::string tag_dir = resolve_tag_dir(path);
  const Metadata meta = read_metadata(tag_dir);
  std::cout << tag_dir << "/" << kMetadataFile << ": ok\n";
  // One buffer, as large as the largest block: memory is bounded by a block, not the model. It
  // grows only once a reader has checked the file holds the blocks the metadata claims.
  std::vector<float> buffer;
  int failed = 0;
  for (size_t rank = 0; rank < meta.ranks.size(); ++rank) {
    const std::string file = tag_dir + "/" + meta.ranks[rank].file;
    try {
      const ShardReader reader(file, meta, static_cast<int>(rank));
      const auto ranges = static_cast<uint32_t>(meta.ranks[rank].ranges.size());
      for (const Range& range : meta.ranks[rank].ranges) buffer.resize(std::max<size_t>(buffer.size(), range.count));
      for (uint32_t range = 0; range < ranges; ++range) {
        for (uint32_t slot = 0; slot < meta.slots.size(); ++slot) reader.read_block(range, slot, buffer.data());
      }
      std::cout << file << ": ok (" << ranges * meta.slots.size() << " blocks, " << meta.ranks[rank].data_bytes
                << " data bytes)\n";
    } catch (const rt::Error& e) {
      std::cout << e.what() << "\n";
      ++failed;
    }
  }
  if (failed > 0) {
    std::cerr << "strata-ckpt: " << failed << " of " << meta.ranks.size() << " rank files failed verification\n";
    return 1;
  }
  return 0;
}

}  // namespace strata::ckpt::tool
