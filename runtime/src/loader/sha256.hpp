// SHA-256 digests (OpenSSL EVP) for pinning plugin library files in the manifest.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace strata::rt {

// Lower-case hex digest (64 characters) of `data`.
std::string sha256_hex(std::string_view data);

// Lower-case hex digest of a file's contents; throws strata::rt::Error if it cannot be read.
std::string sha256_file_hex(const std::filesystem::path& file);

}  // namespace strata::rt
