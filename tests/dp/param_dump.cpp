#include "param_dump.hpp"

#include <cstdint>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace strata::dptest {
namespace {

constexpr char kMagic[] = "STRATADP1";

template <class T>
void put(std::ofstream& out, const T& value) {
  out.write(reinterpret_cast<const char*>(&value), sizeof value);
}

template <class T>
T get(std::ifstream& in, const std::filesystem::path& path) {
  T value{};
  if (!in.read(reinterpret_cast<char*>(&value), sizeof value)) {
    throw std::runtime_error(path.string() + ": truncated parameter dump");
  }
  return value;
}

}  // namespace

void write_dump(const std::filesystem::path& path, const std::vector<NamedTensor>& tensors) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path.string() + ": cannot open for writing");
  out.write(kMagic, sizeof kMagic - 1);
  for (const NamedTensor& t : tensors) {
    put(out, static_cast<uint32_t>(t.name.size()));
    out.write(t.name.data(), static_cast<std::streamsize>(t.name.size()));
    put(out, static_cast<uint64_t>(t.values.size()));
    out.write(reinterpret_cast<const char*>(t.values.data()),
              static_cast<std::streamsize>(t.values.size() * sizeof(float)));
  }
  if (!out) throw std::runtime_error(path.string() + ": write failed");
}

std::vector<NamedTensor> read_dump(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open parameter dump");
  char magic[sizeof kMagic - 1];
  if (!in.read(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof magic) != 0) {
    throw std::runtime_error(path.string() + ": not a parameter dump (bad magic)");
  }
  std::vector<NamedTensor> tensors;
  while (in.peek() != std::char_traits<char>::eof()) {
    NamedTensor t;
    t.name.resize(get<uint32_t>(in, path));
    if (!in.read(t.name.data(), static_cast<std::streamsize>(t.name.size()))) {
      throw std::runtime_error(path.string() + ": truncated parameter dump");
    }
    t.values.resize(get<uint64_t>(in, path));
    if (!in.read(reinterpret_cast<char*>(t.values.data()),
                 static_cast<std::streamsize>(t.values.size() * sizeof(float)))) {
      throw std::runtime_error(path.string() + ": truncated parameter dump");
    }
    tensors.push_back(std::move(t));
  }
  return tensors;
}

}  // namespace strata::dptest
