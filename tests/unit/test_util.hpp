// Helpers shared by the front-end unit tests: inline manifests, temporary folders, error text.
#pragma once

#include <scoped_env.hpp>

#include "error.hpp"
#include "manifest/manifest.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <string>

namespace strata::rt::test {

inline strata_create_options inline_options(const char* json, const char* overrides = nullptr) {
  strata_create_options o{};
  o.struct_size = sizeof o;
  o.manifest_json = json;
  o.overrides_json = overrides;
  return o;
}

inline Manifest load_inline(const std::string& json, const char* overrides = nullptr) {
  return load_manifest(inline_options(json.c_str(), overrides));
}

// The message of the strata::rt::Error that `body` throws; fails the test if it throws nothing.
inline std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a strata::rt::Error";
  return {};
}

// A fresh folder under the system temp dir, removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("strata-unit-" + std::to_string(rd()) + "-" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, const std::string& content) const {
    const auto file = path_ / name;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream(file, std::ios::binary) << content;
    return file;
  }

 private:
  std::filesystem::path path_;
};

// Environment variables for one scope (tests/support).
using strata::test::ScopedEnv;

}  // namespace strata::rt::test
