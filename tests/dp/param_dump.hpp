// Named parameter dumps, so that two runs can be compared tensor by tensor. Binary, native byte
// order: "STRATADP1", then per tensor a uint32 name length, the name, a uint64 count and the
// floats.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace strata::dptest {

struct NamedTensor {
  std::string name;
  std::vector<float> values;
};

void write_dump(const std::filesystem::path& path, const std::vector<NamedTensor>& tensors);
std::vector<NamedTensor> read_dump(const std::filesystem::path& path);  // throws naming the file

}  // namespace strata::dptest
