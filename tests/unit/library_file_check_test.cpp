// The checks a plugin file passes before dlopen: a regular ELF64 shared object for this machine,
// whole (no header or PT_LOAD segment past the end), and writable by no stranger.
#include "loader/library_file_check.hpp"
#include "test_util.hpp"

#include <elf.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include <gmock/gmock.h>
#include <openssl/sha.h>

#include <cstring>
#include <vector>

namespace strata::rt::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

#if defined(__x86_64__)
constexpr uint16_t kNative = EM_X86_64, kOther = EM_AARCH64;
#else
constexpr uint16_t kNative = EM_AARCH64, kOther = EM_X86_64;
#endif

// A minimal ELF64 shared object for this machine: header, one PT_LOAD segment covering the whole
// file, section header table at the end. Each test breaks one field.
struct FakeElf {
  Elf64_Ehdr header{};
  Elf64_Phdr load{};
  std::vector<unsigned char> body = std::vector<unsigned char>(256, 0x90);
  Elf64_Shdr sections[2]{};

  FakeElf() {
    std::memcpy(header.e_ident, ELFMAG, SELFMAG);
    header.e_ident[EI_CLASS] = ELFCLASS64;
    header.e_ident[EI_DATA] = ELFDATA2LSB;
    header.e_ident[EI_VERSION] = EV_CURRENT;
    header.e_type = ET_DYN;
    header.e_machine = kNative;
    header.e_version = EV_CURRENT;
    header.e_ehsize = sizeof(Elf64_Ehdr);
    header.e_phoff = sizeof(Elf64_Ehdr);
    header.e_phentsize = sizeof(Elf64_Phdr);
    header.e_phnum = 1;
    header.e_shoff = sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr) + body.size();
    header.e_shentsize = sizeof(Elf64_Shdr);
    header.e_shnum = 2;
    load.p_type = PT_LOAD;
    load.p_offset = 0;
    load.p_filesz = header.e_shoff;
    load.p_memsz = header.e_shoff;
  }

  std::string bytes() const {
    std::string out;
    auto add = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
    add(&header, sizeof header);
    add(&load, sizeof load);
    add(body.data(), body.size());
    add(sections, sizeof sections);
    return out;
  }
};

fs::path write_elf(const TempDir& dir, const FakeElf& elf, size_t keep = std::string::npos) {
  return dir.write("libplugin.so", elf.bytes().substr(0, keep));
}

TEST(LibraryFileCheck, AcceptsAWellFormedSharedObject) {
  TempDir dir;
  EXPECT_EQ(library_file_problem(write_elf(dir, FakeElf())), std::nullopt);
}

TEST(LibraryFileCheck, AcceptsARealSharedLibrary) {
  // libcrypto, which this test links: a real ET_DYN file for this machine.
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&SHA256), &info), 0);
  EXPECT_EQ(library_file_problem(info.dli_fname), std::nullopt) << info.dli_fname;
}

TEST(LibraryFileCheck, RefusesADirectory) {
  TempDir dir;
  fs::create_directories(dir.path() / "plugin.so");
  EXPECT_EQ(library_file_problem(dir.path() / "plugin.so"), "is a directory, not a shared library");
}

TEST(LibraryFileCheck, RefusesTextAndEmptyFiles) {
  TempDir dir;
  EXPECT_THAT(library_elf_problem(dir.write("text.so", "INPUT(libc.so.6)\n")).value_or(""),
              StartsWith("is not an ELF shared object: it does not start with the ELF magic number"));
  EXPECT_THAT(library_elf_problem(dir.write("empty.so", "")).value_or(""), StartsWith("is empty (0 bytes)"));
  EXPECT_THAT(library_elf_problem(dir.write("short.so", "\x7f" "ELF")).value_or(""),
              StartsWith("is truncated: the ELF identification ends at byte 16, but the file has 4 bytes"));
}

TEST(LibraryFileCheck, RefusesAnotherClassByteOrderOrMachine) {
  TempDir dir;
  FakeElf elf32;
  elf32.header.e_ident[EI_CLASS] = ELFCLASS32;
  EXPECT_THAT(library_elf_problem(write_elf(dir, elf32)).value_or(""),
              StartsWith("is a 32-bit ELF file (ELFCLASS32), but this runtime is 64-bit"));

  FakeElf big;
  big.header.e_ident[EI_DATA] = ELFDATA2MSB;
  EXPECT_EQ(library_elf_problem(write_elf(dir, big)),
            "is a big-endian ELF file, but this machine is little-endian");

  FakeElf arm;
  arm.header.e_machine = kOther;
  const std::string expected = kNative == EM_X86_64
      ? "is built for AArch64 (e_machine 183), but this machine is x86-64 (e_machine 62)"
      : "is built for x86-64 (e_machine 62), but this machine is AArch64 (e_machine 183)";
  EXPECT_EQ(library_elf_problem(write_elf(dir, arm)), expected);
}

TEST(LibraryFileCheck, RefusesWhatIsNotASharedObject) {
  TempDir dir;
  FakeElf exec;
  exec.header.e_type = ET_EXEC;
  EXPECT_EQ(library_elf_problem(write_elf(dir, exec)),
            "is an executable (ET_EXEC), not a shared object (ET_DYN)");
  FakeElf object;
  object.header.e_type = ET_REL;
  EXPECT_THAT(library_elf_problem(write_elf(dir, object)).value_or(""), HasSubstr("an object file (ET_REL)"));
  FakeElf none;
  none.header.e_phnum = 0;
  EXPECT_EQ(library_elf_problem(write_elf(dir, none)), "has no program headers: nothing dlopen could map");
}

TEST(LibraryFileCheck, RefusesATruncatedCopy) {
  TempDir dir;
  const FakeElf elf;
  const size_t whole = elf.bytes().size();
  // Cut inside the section header table, inside the segment, inside the program headers.
  EXPECT_EQ(library_elf_problem(write_elf(dir, elf, whole - 10)),
            "is truncated: its section header table ends at byte " + std::to_string(whole) +
                ", but the file has " + std::to_string(whole - 10) +
                " bytes (an incomplete copy or a full disk?)");
  EXPECT_THAT(library_elf_problem(write_elf(dir, elf, 200)).value_or(""),
              StartsWith("is truncated: segment 0 (PT_LOAD) ends at byte 376, but the file has 200 bytes"));
  EXPECT_THAT(library_elf_problem(write_elf(dir, elf, 70)).value_or(""),
              StartsWith("is truncated: its program header table ends at byte 120, but the file has 70 bytes"));
  EXPECT_THAT(library_elf_problem(write_elf(dir, elf, 40)).value_or(""),
              StartsWith("is truncated: the ELF header ends at byte 64, but the file has 40 bytes"));
}

TEST(LibraryFileCheck, ForgedOffsetsDoNotWrap) {
  TempDir dir;
  FakeElf elf;
  elf.load.p_offset = ~uint64_t{0} - 8;  // offset + size wraps past 2^64
  elf.load.p_filesz = 64;
  EXPECT_THAT(library_elf_problem(write_elf(dir, elf)).value_or(""),
              StartsWith("is truncated: segment 0 (PT_LOAD)"));
  FakeElf table;
  table.header.e_phoff = ~uint64_t{0} - 8;
  EXPECT_THAT(library_elf_problem(write_elf(dir, table)).value_or(""),
              StartsWith("is truncated: its program header table"));
}

TEST(LibraryFileCheck, RefusesWorldWritableFiles) {
  TempDir dir;
  const fs::path file = write_elf(dir, FakeElf());
  fs::permissions(file, fs::perms::others_write, fs::perm_options::add);
  EXPECT_THAT(library_file_problem(file).value_or(""),
              StartsWith("is world-writable (mode 0"));
}

TEST(LibraryFileCheck, RefusesAWorldWritableFolderUnlessSticky) {
  TempDir dir;
  const fs::path file = dir.write("open/libplugin.so", FakeElf().bytes());
  const fs::path open = dir.path() / "open";
  fs::permissions(open, fs::perms::all);  // 0777
  EXPECT_EQ(library_permission_problem(file),
            "is in the folder " + fs::canonical(open).string() +
                ", which is world-writable without the sticky bit (mode 0777): anyone on this "
                "machine could replace the library; remove the folder's write bit for others "
                "(chmod o-w) or set its sticky bit (chmod +t)");
  // The sticky bit (as on /tmp) keeps others from renaming or deleting what they do not own.
  fs::permissions(open, fs::perms::all | fs::perms::sticky_bit);
  EXPECT_EQ(library_permission_problem(file), std::nullopt);
  // A symbolic link is judged by where its target lives.
  fs::permissions(open, fs::perms::all);
  fs::create_symlink(file, dir.path() / "link.so");
  EXPECT_THAT(library_permission_problem(dir.path() / "link.so").value_or(""), HasSubstr("without the sticky bit"));
}

TEST(LibraryFileCheck, RefusesANamedPipeWithoutBlocking) {
  TempDir dir;
  const fs::path fifo = dir.path() / "pipe.so";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(library_file_problem(fifo), "is a named pipe, not a shared library file");
  EXPECT_EQ(library_elf_problem(fifo), "is a named pipe, not a shared library file");
}

}  // namespace
}  // namespace strata::rt::test
