// The plugin loader against fixture libraries that are wrong in one way each: every message must
// name the manifest, the JSON path, the library file and both sides of the disagreement.
#include "error.hpp"
#include "plugin_loader.hpp"
#include "sha256.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

namespace strata::rt {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

const fs::path kFixtureDir = STRATA_TEST_FIXTURE_DIR;
const std::string kAbi = std::to_string(STRATA_ABI_MAJOR) + "." + std::to_string(STRATA_ABI_MINOR);

std::string fixture(const std::string& name) { return (kFixtureDir / ("lib" + name + ".so")).string(); }

// An inline manifest whose offload section names `library`, looked up from the fixture folder.
Manifest manifest_with_offload(const std::string& library, const std::string& sha256 = "") {
  nlohmann::json doc = {{"offload", {{"library", library}}}};
  if (!sha256.empty()) doc["offload"]["sha256"] = sha256;
  const std::string text = doc.dump();
  const std::string base = kFixtureDir.string();
  strata_create_options o{};
  o.struct_size = sizeof o;
  o.manifest_json = text.c_str();
  o.base_dir = base.c_str();
  return load_manifest(o);
}

std::string load_error(const std::string& library, strata_plugin_kind kind = STRATA_PLUGIN_OFFLOAD) {
  const Manifest m = manifest_with_offload(library);
  try {
    load_plugin(m.offload, kind, m);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), STRATA_ERR_ABI) << e.what();
    return e.what();
  }
  ADD_FAILURE() << library << " loaded, but should have been rejected";
  return {};
}

TEST(Loader, AcceptsTheCorrectFixtureByNameAndByPath) {
  for (const std::string& library : {std::string("strata_test_good_offload"), fixture("strata_test_good_offload")}) {
    const Manifest m = manifest_with_offload(library);
    const LoadedPlugin plugin = load_plugin(m.offload, STRATA_PLUGIN_OFFLOAD, m);
    EXPECT_EQ(plugin.path(), fs::path(fixture("strata_test_good_offload")));
    EXPECT_STREQ(plugin.descriptor().name, "test-fixture");
    EXPECT_EQ(plugin.descriptor().kind, STRATA_PLUGIN_OFFLOAD);
    EXPECT_NE(plugin.ops<strata_offload_ops>().step, nullptr);
  }
}

TEST(Loader, AbiMajorMismatchNamesFileAndBothVersions) {
  EXPECT_EQ(load_error("strata_test_abi_major2"),
            "<inline manifest>: /offload: " + fixture("strata_test_abi_major2") +
                ": plugin ABI 2.0 is not compatible with this runtime's ABI " + kAbi +
                " (major must match)");
}

TEST(Loader, NewerMinorIsRejected) {
  const std::string newer = std::to_string(STRATA_ABI_MAJOR) + "." + std::to_string(STRATA_ABI_MINOR + 1);
  const std::string message = load_error("strata_test_abi_minor_newer");
  EXPECT_THAT(message, HasSubstr(fixture("strata_test_abi_minor_newer")));
  EXPECT_THAT(message, HasSubstr("plugin ABI " + newer + " is newer than this runtime's ABI " + kAbi));
}

TEST(Loader, TooSmallDescriptorNamesBothSizes) {
  EXPECT_EQ(load_error("strata_test_small_descriptor"),
            "<inline manifest>: /offload: " + fixture("strata_test_small_descriptor") +
                ": plugin descriptor struct_size " +
                std::to_string(offsetof(strata_plugin_descriptor, name)) +
                " is smaller than ABI 1.0's " + std::to_string(sizeof(strata_plugin_descriptor)));
}

TEST(Loader, TooSmallOpsTableNamesBothSizes) {
  EXPECT_THAT(load_error("strata_test_small_ops"),
              HasSubstr(fixture("strata_test_small_ops") + ": offload ops table struct_size " +
                        std::to_string(offsetof(strata_offload_ops, step)) +
                        " is smaller than ABI 1.0's " + std::to_string(sizeof(strata_offload_ops))));
}

TEST(Loader, WrongKindNamesBothKinds) {
  EXPECT_EQ(load_error("strata_test_wrong_kind"),
            "<inline manifest>: /offload: " + fixture("strata_test_wrong_kind") +
                ": plugin 'test-fixture' is a sharding plugin, but this stratum needs an offload "
                "plugin");
  EXPECT_THAT(load_error("strata_test_good_offload", STRATA_PLUGIN_SHARDING),
              HasSubstr("is an offload plugin, but this stratum needs a sharding plugin"));
}

TEST(Loader, LibraryWithoutEntrySymbol) {
  EXPECT_EQ(load_error("strata_test_no_entry"),
            "<inline manifest>: /offload: " + fixture("strata_test_no_entry") +
                ": no symbol strata_plugin_entry_v1; is this a Strata plugin?");
}

TEST(Loader, UnresolvedSymbolFailsAtLoadNamingIt) {
  const std::string message = load_error("strata_test_unresolved");
  EXPECT_THAT(message, HasSubstr("<inline manifest>: /offload/library: cannot load " +
                                 fixture("strata_test_unresolved") + ": "));
  EXPECT_THAT(message, HasSubstr("undefined symbol: strata_fixture_missing_function"));
}

TEST(Loader, Sha256PinIsChecked) {
  const std::string file = fixture("strata_test_good_offload");
  const std::string actual = sha256_file_hex(file);
  const Manifest pinned = manifest_with_offload("strata_test_good_offload", actual);
  EXPECT_NO_THROW(load_plugin(pinned.offload, STRATA_PLUGIN_OFFLOAD, pinned));

  const std::string wrong(64, '0');
  const Manifest bad = manifest_with_offload("strata_test_good_offload", wrong);
  try {
    load_plugin(bad.offload, STRATA_PLUGIN_OFFLOAD, bad);
    ADD_FAILURE() << "a wrong sha256 pin was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "<inline manifest>: /offload/sha256: " + file + " has sha256 " +
                                         actual + ", but the manifest expects " + wrong);
  }
}

// The real plugins, found by name through STRATA_PLUGIN_PATH, pass every check for their kind.
TEST(Loader, RealPluginsLoadAsTheirKind) {
  setenv("STRATA_PLUGIN_PATH", STRATA_PLUGIN_OUTPUT_DIR, 1);
  const std::pair<const char*, strata_plugin_kind> plugins[] = {
      {"strata_allreduce_mpi", STRATA_PLUGIN_COMM},
      {"strata_zero", STRATA_PLUGIN_SHARDING},
      {"strata_amp", STRATA_PLUGIN_PRECISION},
      {"strata_offload", STRATA_PLUGIN_OFFLOAD}};
  for (const auto& [name, kind] : plugins) {
    if (!fs::exists(fs::path(STRATA_PLUGIN_OUTPUT_DIR) / ("lib" + std::string(name) + ".so"))) {
      ADD_FAILURE() << name << " has not been built";
      continue;
    }
    const Manifest m = manifest_with_offload(name);
    const LoadedPlugin plugin = load_plugin(m.offload, kind, m);
    EXPECT_EQ(plugin.descriptor().kind, kind) << name;
    EXPECT_EQ(plugin.descriptor().abi_major, static_cast<uint32_t>(STRATA_ABI_MAJOR)) << name;
  }
  unsetenv("STRATA_PLUGIN_PATH");
}

}  // namespace
}  // namespace strata::rt
