// Writes the broken plugin files of the catalogue's loader cases at test time (binaries are never
// committed): ELF headers for another class, byte order or machine, and a truncated copy of a real
// plugin.
//
//   strata_elf_fixture elf32|big-endian|other-machine <out>
//   strata_elf_fixture truncate <real plugin> <out>     (the first half of its bytes)
#include <elf.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

#if defined(__x86_64__)
constexpr uint16_t kOtherMachine = EM_AARCH64;
#else
constexpr uint16_t kOtherMachine = EM_X86_64;
#endif

template <class Header>
void identify(Header& h, unsigned char elf_class, unsigned char data) {
  std::memcpy(h.e_ident, ELFMAG, SELFMAG);
  h.e_ident[EI_CLASS] = elf_class;
  h.e_ident[EI_DATA] = data;
  h.e_ident[EI_VERSION] = EV_CURRENT;
  h.e_version = EV_CURRENT;
  h.e_ehsize = sizeof(Header);
}

// An ELF header followed by zero padding: enough for the loader to judge the file by its header.
template <class Header>
std::string with_padding(const Header& h) {
  std::string bytes(reinterpret_cast<const char*>(&h), sizeof h);
  bytes.resize(4096, '\0');
  return bytes;
}

std::string elf32() {
  Elf32_Ehdr h{};
  identify(h, ELFCLASS32, ELFDATA2LSB);
  h.e_type = ET_DYN;
  h.e_machine = EM_386;
  return with_padding(h);
}

std::string elf64(uint16_t machine, bool big_endian) {
  Elf64_Ehdr h{};
  identify(h, ELFCLASS64, big_endian ? ELFDATA2MSB : ELFDATA2LSB);
  h.e_type = big_endian ? __builtin_bswap16(ET_DYN) : ET_DYN;
  h.e_machine = big_endian ? __builtin_bswap16(EM_S390) : machine;
  return with_padding(h);
}

bool write(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  std::string bytes;
  if (args.size() == 2 && args[0] == "elf32") {
    bytes = elf32();
  } else if (args.size() == 2 && args[0] == "big-endian") {
    bytes = elf64(0, true);
  } else if (args.size() == 2 && args[0] == "other-machine") {
    bytes = elf64(kOtherMachine, false);
  } else if (args.size() == 3 && args[0] == "truncate") {
    std::ifstream in(args[1], std::ios::binary);
    if (in) bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (bytes.empty()) {
      std::fprintf(stderr, "strata_elf_fixture: cannot read %s\n", args[1].c_str());
      return 1;
    }
    bytes.resize(bytes.size() / 2);
  } else {
    std::fprintf(stderr, "usage: strata_elf_fixture elf32|big-endian|other-machine <out>\n"
                         "       strata_elf_fixture truncate <library> <out>\n");
    return 2;
  }
  if (!write(args.back(), bytes)) {
    std::fprintf(stderr, "strata_elf_fixture: cannot write %s\n", args.back().c_str());
    return 1;
  }
  return 0;
}
