#include "param_file.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace strata::fmnist {

void write_params(const std::filesystem::path& path, const Mlp& model) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw std::runtime_error(path.string() + ": cannot open for writing (" + std::strerror(errno) +
                             ")");
  for (const Param& p : model.params()) {
    out.write(reinterpret_cast<const char*>(p.data.data()),
              static_cast<std::streamsize>(p.data.size() * sizeof(float)));
  }
  if (!out.flush()) throw std::runtime_error(path.string() + ": write failed");
}

std::vector<float> read_params(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open (" + std::strerror(errno) + ")");
  const auto bytes = std::filesystem::file_size(path);
  if (bytes % sizeof(float) != 0) {
    throw std::runtime_error(path.string() + ": size " + std::to_string(bytes) +
                             " is not a whole number of floats");
  }
  std::vector<float> values(bytes / sizeof(float));
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(bytes));
  if (!in) throw std::runtime_error(path.string() + ": read failed");
  return values;
}

}  // namespace strata::fmnist
