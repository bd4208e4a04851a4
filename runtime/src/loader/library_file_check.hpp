// What the loader checks about a plugin file before dlopen sees it. dlopen maps a file's segments
// and trusts its headers: a truncated copy faults (SIGBUS) inside the dynamic loader, and a file
// anyone can write runs anyone's code in the job. Each check returns the reason, as a sentence
// fragment to follow "<file>: ", or nullopt when the file passes.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace strata::rt {

// Not a regular file, world-writable, or in a world-writable folder without the sticky bit (any
// folder on the way from / counts: whoever can rename a folder can swap what is inside it).
std::optional<std::string> library_permission_problem(const std::filesystem::path& file);

// Not an ELF shared object for this machine (magic, class, byte order, e_machine, e_type), or
// truncated: its program headers, a PT_LOAD segment's bytes or its section headers reach past
// the end of the file.
std::optional<std::string> library_elf_problem(const std::filesystem::path& file);

// Both of the above, permissions first.
std::optional<std::string> library_file_problem(const std::filesystem::path& file);

}  // namespace strata::rt
