#include "loader/library_file_check.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace strata::rt {
namespace fs = std::filesystem;

namespace {

// This machine's ELF identity: a library must match it for dlopen to map it at all, and saying
// which machine it was built for beats dlopen's "wrong ELF class" or "invalid ELF header".
#if defined(__x86_64__)
constexpr uint16_t kMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kMachine = EM_AARCH64;
#elif defined(__riscv) && __riscv_xlen == 64
constexpr uint16_t kMachine = EM_RISCV;
#elif defined(__powerpc64__)
constexpr uint16_t kMachine = EM_PPC64;
#elif defined(__s390x__)
constexpr uint16_t kMachine = EM_S390;
#else
#error "library_file_check.cpp: add this machine's ELF e_machine value"
#endif
static_assert(sizeof(void*) == 8, "plugins are checked as ELF64 files: the runtime is 64-bit");
constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
constexpr unsigned char kData = kLittleEndian ? ELFDATA2LSB : ELFDATA2MSB;

std::string machine_name(uint16_t machine) {
  switch (machine) {
    case EM_386: return "x86 (32-bit)";
    case EM_X86_64: return "x86-64";
    case EM_ARM: return "ARM (32-bit)";
    case EM_AARCH64: return "AArch64";
    case EM_RISCV: return "RISC-V";
    case EM_PPC: return "PowerPC (32-bit)";
    case EM_PPC64: return "PowerPC64";
    case EM_S390: return "s390";
    default: return "machine " + std::to_string(machine);
  }
}

std::string type_name(uint16_t type) {
  switch (type) {
    case ET_EXEC: return "an executable (ET_EXEC)";
    case ET_REL: return "an object file (ET_REL), not yet linked into a shared library";
    case ET_CORE: return "a core dump (ET_CORE)";
    default: return "of ELF type " + std::to_string(type);
  }
}

std::string mode_text(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a named pipe";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

std::string truncated(const std::string& what, uint64_t end, uint64_t size) {
  return "is truncated: " + what + " ends at byte " + std::to_string(end) + ", but the file has " +
         std::to_string(size) + " bytes (an incomplete copy or a full disk?)";
}

// A read-only descriptor that never blocks on open (a FIFO named as a plugin must not hang the
// job) and reads exactly the bytes asked for.
class ReadOnlyFile {
 public:
  explicit ReadOnlyFile(const fs::path& path)
      : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)) {}
  ~ReadOnlyFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  bool is_open() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  bool read_at(void* out, size_t bytes, uint64_t offset) const {
    auto* p = static_cast<char*>(out);
    while (bytes > 0) {
      const ssize_t got = ::pread(fd_, p, bytes, static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      p += got;
      bytes -= static_cast<size_t>(got);
      offset += static_cast<uint64_t>(got);
    }
    return true;
  }

 private:
  int fd_;
};

// The header fields that decide whether this machine can load the file at all.
std::optional<std::string> identity_problem(const unsigned char* ident, uint64_t size) {
  if (size == 0) return "is empty (0 bytes): an incomplete copy or a full disk?";
  if (size < SELFMAG || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return "is not an ELF shared object: it does not start with the ELF magic number "
           "(a text file, a linker script or an incomplete download?)";
  }
  if (size < EI_NIDENT) return truncated("the ELF identification", EI_NIDENT, size);
  if (ident[EI_CLASS] == ELFCLASS32) {
    return "is a 32-bit ELF file (ELFCLASS32), but this runtime is 64-bit and loads only "
           "ELFCLASS64 libraries";
  }
  if (ident[EI_CLASS] != ELFCLASS64) {
    return "has an unknown ELF class " + std::to_string(ident[EI_CLASS]) + " (expected ELFCLASS64)";
  }
  if (ident[EI_DATA] != kData) {
    const bool big = ident[EI_DATA] == ELFDATA2MSB;
    const bool little = ident[EI_DATA] == ELFDATA2LSB;
    return std::string("is ") + (big ? "a big-endian" : little ? "a little-endian" : "an unknown-byte-order") +
           " ELF file, but this machine is " + (kLittleEndian ? "little-endian" : "big-endian");
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> library_permission_problem(const fs::path& file) {
  struct stat st{};
  if (::stat(file.c_str(), &st) != 0) return std::string("cannot be inspected: ") + std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "is a directory, not a shared library";
  if (!S_ISREG(st.st_mode)) return "is " + kind_of(st.st_mode) + ", not a shared library file";
  if ((st.st_mode & S_IWOTH) != 0) {
    return "is world-writable (mode " + mode_text(st.st_mode) +
           "): anyone on this machine could change the code it runs; remove the write bit "
           "(chmod o-w)";
  }
  // Check the folders the real file lives in (symbolic links resolved), up to the root.
  std::error_code ec;
  const fs::path real = fs::canonical(file, ec);
  if (ec) return "cannot be resolved: " + ec.message();
  for (fs::path dir = real.parent_path();; dir = dir.parent_path()) {
    struct stat ds{};
    if (::stat(dir.c_str(), &ds) == 0 && (ds.st_mode & S_IWOTH) != 0 && (ds.st_mode & S_ISVTX) == 0) {
      return "is in the folder " + dir.string() + ", which is world-writable without the sticky bit (mode " +
             mode_text(ds.st_mode) +
             "): anyone on this machine could replace the library; remove the folder's write bit "
             "for others (chmod o-w) or set its sticky bit (chmod +t)";
    }
    if (dir == dir.parent_path()) break;
  }
  return std::nullopt;
}

std::optional<std::string> library_elf_problem(const fs::path& file) {
  const ReadOnlyFile in(file);
  if (!in.is_open()) return std::string("cannot be opened: ") + std::strerror(errno);
  struct stat st{};
  if (::fstat(in.fd(), &st) != 0) return std::string("cannot be inspected: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "is " + kind_of(st.st_mode) + ", not a shared library file";
  const auto size = static_cast<uint64_t>(st.st_size);

  Elf64_Ehdr header{};
  const size_t head = static_cast<size_t>(std::min<uint64_t>(size, sizeof header));
  if (!in.read_at(&header, head, 0)) return std::string("cannot be read: ") + std::strerror(errno);
  if (auto problem = identity_problem(header.e_ident, size)) return problem;
  if (size < sizeof header) return truncated("the ELF header", sizeof header, size);
  if (header.e_machine != kMachine) {
    return "is built for " + machine_name(header.e_machine) + " (e_machine " +
           std::to_string(header.e_machine) + "), but this machine is " + machine_name(kMachine) +
           " (e_machine " + std::to_string(kMachine) + ")";
  }
  if (header.e_type != ET_DYN) return "is " + type_name(header.e_type) + ", not a shared object (ET_DYN)";

  // Program headers: what dlopen maps. Every PT_LOAD byte it maps must exist in the file.
  if (header.e_phnum == 0) return std::string("has no program headers: nothing dlopen could map");
  if (header.e_phentsize != sizeof(Elf64_Phdr)) {
    return "has malformed program headers (entry size " + std::to_string(header.e_phentsize) +
           ", expected " + std::to_string(sizeof(Elf64_Phdr)) + ")";
  }
  const uint64_t table_bytes = uint64_t{header.e_phnum} * sizeof(Elf64_Phdr);
  if (header.e_phoff > size || table_bytes > size - header.e_phoff) {
    return truncated("its program header table", header.e_phoff + table_bytes, size);
  }
  std::vector<Elf64_Phdr> segments(header.e_phnum);
  if (!in.read_at(segments.data(), table_bytes, header.e_phoff)) {
    return std::string("cannot be read: ") + std::strerror(errno);
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    const Elf64_Phdr& s = segments[i];
    if (s.p_type != PT_LOAD) continue;
    if (s.p_offset > size || s.p_filesz > size - s.p_offset) {
      const uint64_t end = s.p_offset + s.p_filesz;  // may wrap on a forged header; shown as is
      return truncated("segment " + std::to_string(i) + " (PT_LOAD)", end, size);
    }
  }

  // Section headers are not mapped, but they sit at the end of the file: the plainest sign of a
  // copy cut short. (e_shnum 0 with e_shoff set means the count lives in section 0: one entry.)
  if (header.e_shoff != 0) {
    const uint64_t count = header.e_shnum == 0 ? 1 : header.e_shnum;
    const uint64_t bytes = count * header.e_shentsize;
    if (header.e_shoff > size || bytes > size - header.e_shoff) {
      return truncated("its section header table", header.e_shoff + bytes, size);
    }
  }
  return std::nullopt;
}

std::optional<std::string> library_file_problem(const fs::path& file) {
  if (auto problem = library_permission_problem(file)) return problem;
  return library_elf_problem(file);
}

}  // namespace strata::rt
