// The plugin loader against fixture libraries that are wrong in one way each: every message must
// name the manifest, the JSON path, the library file and both sides of the disagreement.
#include "error.hpp"
#include "loader/plugin_loader.hpp"
#include "loader/sha256.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

namespace strata::rt {
namespace {

using ::testing::ContainsRegex;
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

// The descriptor's minor is the plugin's floor (ABI 1.3): one above the runtime's is refused, and
// the message names both versions.
TEST(Loader, FloorAboveTheRuntimeMinorIsRejected) {
  const std::string needed = std::to_string(STRATA_ABI_MAJOR) + "." + std::to_string(STRATA_ABI_MINOR + 1);
  const std::string message = load_error("strata_test_abi_minor_newer");
  EXPECT_THAT(message, HasSubstr(fixture("strata_test_abi_minor_newer")));
  EXPECT_THAT(message, HasSubstr(needed));
  EXPECT_THAT(message, HasSubstr(kAbi));
  EXPECT_THAT(message, ContainsRegex("newer|needs"));
}

TEST(Loader, TooSmallDescriptorNamesBothSizes) {
  EXPECT_EQ(load_error("strata_test_small_descriptor"),
            "<inline manifest>: /offload: " + fixture("strata_test_small_descriptor") +
                ": plugin descriptor struct_size " +
                std::to_string(offsetof(strata_plugin_descriptor, name)) +
                " is smaller than ABI 1.0's " + std::to_string(sizeof(strata_plugin_descriptor)));
}

// The header says the table ends before `step`: smaller than an ABI 1.3 offload table, which ends
// with `step` (1.6 appended the checkpoint functions after it).
TEST(Loader, TooSmallOpsTableNamesBothSizes) {
  const std::string message = load_error("strata_test_small_ops");
  EXPECT_THAT(message, HasSubstr(fixture("strata_test_small_ops")));
  EXPECT_THAT(message, ContainsRegex("[^0-9]" + std::to_string(offsetof(strata_offload_ops, step)) +
                                     "[^0-9]"));
  const size_t abi_1_3 = STRATA_OFFLOAD_OPS_SIZE_1_3;
  EXPECT_THAT(message, ContainsRegex("ABI 1.3's " + std::to_string(abi_1_3) + "([^0-9]|$)"));
}

TEST(Loader, OpsHeaderKindMustMatchTheDescriptor) {
  const std::string message = load_error("strata_test_header_kind");
  EXPECT_THAT(message, HasSubstr(fixture("strata_test_header_kind")));
  EXPECT_THAT(message, HasSubstr("header"));
  EXPECT_THAT(message, HasSubstr("sharding"));
  EXPECT_THAT(message, HasSubstr("offload"));
}

TEST(Loader, MissingRequiredFunctionIsNamed) {
  const std::string message = load_error("strata_test_missing_required", STRATA_PLUGIN_SHARDING);
  EXPECT_THAT(message, HasSubstr(fixture("strata_test_missing_required")));
  EXPECT_THAT(message, HasSubstr("finalize"));
  EXPECT_THAT(message, ContainsRegex("[Rr]equired"));
}

TEST(Loader, PartialGroupFunctionsAreRefused) {
  const std::string message = load_error("strata_test_partial_groups", STRATA_PLUGIN_SHARDING);
  EXPECT_THAT(message, HasSubstr(fixture("strata_test_partial_groups")));
  EXPECT_THAT(message, HasSubstr("release"));
}

TEST(Loader, WrongKindNamesBothKinds) {
  EXPECT_EQ(load_error("strata_test_wrong_kind"),
            "<inline manifest>: /offload: " + fixture("strata_test_wrong_kind") +
                ": plugin 'test-fixture' is a sharding plugin, but this stratum needs an offload "
                "plugin");
  EXPECT_THAT(load_error("strata_test_good_offload", STRATA_PLUGIN_SHARDING),
              HasSubstr("is an offload plugin, but this stratum needs a sharding plugin"));
}

// Plugins built with today's header through STRATA_PLUGIN / STRATA_PLUGIN_NEEDING: the floor is
// what they declared, and this runtime (minor STRATA_ABI_MINOR) loads both.
TEST(Loader, TodaysPluginsLoadWithTheirDeclaredFloor) {
  const std::pair<const char*, uint32_t> plugins[] = {{"strata_test_floor3_offload", 3u},
                                                      {"strata_test_floor4_offload", 4u}};
  for (const auto& [name, floor] : plugins) {
    const Manifest m = manifest_with_offload(name);
    const LoadedPlugin plugin = load_plugin(m.offload, STRATA_PLUGIN_OFFLOAD, m);
    EXPECT_EQ(plugin.descriptor().min_runtime_minor, floor) << name;
    const auto* header = static_cast<const strata_ops_header*>(plugin.descriptor().ops);
    EXPECT_EQ(header->built_minor, static_cast<uint32_t>(STRATA_ABI_MINOR)) << name;
    EXPECT_EQ(header->struct_size, sizeof(strata_offload_ops)) << name;
  }
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

// STRATA_EMULATE_ABI_MINOR=3 makes the runtime report 1.3 (read at each load): a floor of 1.3 still
// loads, a floor of 1.4 is refused, naming both versions.
TEST(Loader, EmulatedOlderMinorRefusesHigherFloors) {
  setenv("STRATA_EMULATE_ABI_MINOR", "3", 1);
  const Manifest floor3 = manifest_with_offload("strata_test_floor3_offload");
  EXPECT_NO_THROW(load_plugin(floor3.offload, STRATA_PLUGIN_OFFLOAD, floor3));
  const std::string message = load_error("strata_test_floor4_offload");
  unsetenv("STRATA_EMULATE_ABI_MINOR");
  EXPECT_THAT(message, HasSubstr(fixture("strata_test_floor4_offload")));
  EXPECT_THAT(message, HasSubstr("1.4"));
  EXPECT_THAT(message, HasSubstr("1.3"));
  EXPECT_THAT(message, ContainsRegex("newer|needs|at least"));
  const Manifest floor4 = manifest_with_offload("strata_test_floor4_offload");
  EXPECT_NO_THROW(load_plugin(floor4.offload, STRATA_PLUGIN_OFFLOAD, floor4)) << "without the variable";
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
    // Ported to ABI 1.3+: a floor the runtime meets, and a table that starts with its header.
    EXPECT_GE(plugin.descriptor().min_runtime_minor,
              static_cast<uint32_t>(STRATA_ABI_MINOR_TABLES)) << name;
    EXPECT_LE(plugin.descriptor().min_runtime_minor, static_cast<uint32_t>(STRATA_ABI_MINOR))
        << name;
    const auto* header = static_cast<const strata_ops_header*>(plugin.descriptor().ops);
    EXPECT_EQ(header->kind, kind) << name;
    EXPECT_EQ(header->abi_major, static_cast<uint32_t>(STRATA_ABI_MAJOR)) << name;
  }
  unsetenv("STRATA_PLUGIN_PATH");
}

}  // namespace
}  // namespace strata::rt
