// strata-ckpt's subcommands. Each returns the process's exit status and throws strata::rt::Error
// for a problem main() prints as one line.
#pragma once

#include "checkpoint/format.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace strata::ckpt::tool {

// PATH as given: a tag folder (holds metadata.json) or a checkpoint folder whose `latest` file
// names the tag. Returns the tag folder.
std::string resolve_tag_dir(const std::string& path);

int inspect(const std::string& path, bool as_json);
int verify(const std::string& path);
int consolidate(const std::string& path, const std::string& out, bool with_optimizer);

// One tensor of a safetensors file: F32, shape [count], data at [begin, begin + count * 4).
struct Tensor {
  std::string name;
  uint32_t param = 0;
  uint32_t slot = 0;
  uint64_t count = 0;
  uint64_t begin = 0;
};
// Lays the tensors out back to back in order and returns the file's first bytes: the 8-byte
// header length and the JSON header, padded with spaces so the data starts 8-byte aligned.
// `out` names the file in messages.
std::string safetensors_header(std::vector<Tensor>& tensors,
                               const std::vector<std::pair<std::string, std::string>>& metadata,
                               const std::string& out);

}  // namespace strata::ckpt::tool
