// Plugin search path order and the name-to-file rules.
#include "loader/plugin_loader.hpp"
#include "test_util.hpp"

#include <gmock/gmock.h>

namespace strata::rt::test {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

TEST(PluginSearchPath, ManifestDirThenEnvironmentThenRuntimeDir) {
  ScopedEnv env("STRATA_PLUGIN_PATH", "/first::/second:");
  const auto dirs = plugin_search_path("/manifests");
  ASSERT_EQ(dirs.size(), 4u);
  EXPECT_EQ(dirs[0], fs::path("/manifests"));
  EXPECT_EQ(dirs[1], fs::path("/first"));
  EXPECT_EQ(dirs[2], fs::path("/second"));
  // The last entry is <folder of the module holding this code>/strata/plugins: here the test
  // executable, in a real host libstrata.so.
  EXPECT_EQ(dirs[3].filename(), "plugins");
  EXPECT_EQ(dirs[3].parent_path().filename(), "strata");
  EXPECT_TRUE(dirs[3].is_absolute());
}

TEST(PluginSearchPath, WithoutEnvironment) {
  ScopedEnv env("STRATA_PLUGIN_PATH", nullptr);
  const auto dirs = plugin_search_path("/m");
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_EQ(dirs[0], fs::path("/m"));
}

TEST(FindPluginLibrary, TriesLibNameSoThenNameSoThenName) {
  TempDir dir;
  dir.write("a/libboth.so", "");
  dir.write("a/both.so", "");
  dir.write("a/plain.so", "");
  dir.write("a/bare", "");
  const std::vector<fs::path> path{dir.path() / "a"};
  EXPECT_EQ(find_plugin_library("both", "/unused", path), dir.path() / "a/libboth.so");
  EXPECT_EQ(find_plugin_library("plain", "/unused", path), dir.path() / "a/plain.so");
  EXPECT_EQ(find_plugin_library("bare", "/unused", path), dir.path() / "a/bare");
  EXPECT_EQ(find_plugin_library("absent", "/unused", path), std::nullopt);
}

TEST(FindPluginLibrary, EarlierFolderWinsAndFoldersAreNotFiles) {
  TempDir dir;
  dir.write("first/libx.so", "");
  dir.write("second/libx.so", "");
  fs::create_directories(dir.path() / "first/liby.so");  // a folder with a library's name
  dir.write("second/liby.so", "");
  const std::vector<fs::path> path{dir.path() / "first", dir.path() / "second"};
  EXPECT_EQ(find_plugin_library("x", "/unused", path), dir.path() / "first/libx.so");
  EXPECT_EQ(find_plugin_library("y", "/unused", path), dir.path() / "second/liby.so");
}

TEST(FindPluginLibrary, PathsAreRelativeToTheManifestFolder) {
  TempDir dir;
  dir.write("m/plugins/libcustom.so", "");
  dir.write("elsewhere/libcustom.so", "");
  const std::vector<fs::path> path{dir.path() / "elsewhere"};
  const fs::path manifest_dir = dir.path() / "m";
  EXPECT_EQ(find_plugin_library("plugins/libcustom.so", manifest_dir, path),
            dir.path() / "m/plugins/libcustom.so");
  EXPECT_EQ(find_plugin_library("./plugins/../plugins/libcustom.so", manifest_dir, path),
            dir.path() / "m/plugins/libcustom.so");
  // A name ending in .so is a path too: not searched for on the search path.
  EXPECT_EQ(find_plugin_library("libcustom.so", manifest_dir, path), std::nullopt);
  const fs::path absolute = dir.path() / "elsewhere/libcustom.so";
  EXPECT_EQ(find_plugin_library(absolute.string(), manifest_dir, path), absolute);
}

TEST(LoadPlugin, NotFoundListsEverySearchedFolder) {
  TempDir dir;
  ScopedEnv env("STRATA_PLUGIN_PATH", "/extra/one");
  strata_create_options o = inline_options(R"({"offload": {"library": "no_such_plugin"}})");
  const std::string base = dir.path().string();
  o.base_dir = base.c_str();
  const Manifest m = load_manifest(o);
  const std::string message = error_of([&] { load_plugin(m.offload, STRATA_PLUGIN_OFFLOAD, m); });
  EXPECT_THAT(message, HasSubstr("<inline manifest>: /offload/library: plugin library "
                                 "'no_such_plugin' not found; searched: " + base + ", /extra/one, "));
  EXPECT_THAT(message, HasSubstr("strata/plugins"));
}

TEST(PluginKindName, NamesEveryKind) {
  EXPECT_EQ(plugin_kind_name(STRATA_PLUGIN_COMM), "comm");
  EXPECT_EQ(plugin_kind_name(STRATA_PLUGIN_SHARDING), "sharding");
  EXPECT_EQ(plugin_kind_name(STRATA_PLUGIN_PRECISION), "precision");
  EXPECT_EQ(plugin_kind_name(STRATA_PLUGIN_OFFLOAD), "offload");
  EXPECT_EQ(plugin_kind_name(9), "unknown kind 9");
}

}  // namespace
}  // namespace strata::rt::test
