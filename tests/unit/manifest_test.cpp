// Manifest reading and validation: sources, parse errors, key types, strata sections, overrides.
#include "test_util.hpp"

#include <gmock/gmock.h>


namespace strata::rt::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ManifestSource, RequiresExactlyOneOfPathAndJson) {
  strata_create_options none{};
  none.struct_size = sizeof none;
  EXPECT_THAT(error_of([&] { load_manifest(none); }), HasSubstr("got neither"));

  strata_create_options both = inline_options("{}");
  both.manifest_path = "m.json";
  EXPECT_THAT(error_of([&] { load_manifest(both); }), HasSubstr("got both"));
}

TEST(ManifestSource, MissingFileNamesPathAndReason) {
  TempDir dir;
  const std::string path = (dir.path() / "absent.json").string();
  strata_create_options o{};
  o.struct_size = sizeof o;
  o.manifest_path = path.c_str();
  EXPECT_EQ(error_of([&] { load_manifest(o); }),
            path + ": cannot open manifest: No such file or directory");
}

TEST(ManifestSource, FileManifestRecordsSourceAndFolder) {
  TempDir dir;
  const auto file = dir.write("sub/run.json", R"({"train_batch_size": 8})");
  const std::string path = file.string();
  strata_create_options o{};
  o.struct_size = sizeof o;
  o.manifest_path = path.c_str();
  const Manifest m = load_manifest(o);
  EXPECT_EQ(m.source, path);
  EXPECT_EQ(m.base_dir, std::filesystem::absolute(dir.path() / "sub").lexically_normal());
  EXPECT_EQ(m.train_batch_size, 8u);
}

TEST(ManifestSource, InlineManifestUsesBaseDirOrCurrentDir) {
  const Manifest cwd = load_inline("{}");
  EXPECT_EQ(cwd.source, "<inline manifest>");
  EXPECT_EQ(cwd.base_dir, std::filesystem::current_path());

  strata_create_options o = inline_options("{}");
  o.base_dir = "/opt/plugins";
  EXPECT_EQ(load_manifest(o).base_dir, std::filesystem::path("/opt/plugins"));
}

TEST(ManifestSource, FieldsBeyondCallersStructSizeAreIgnored) {
  strata_create_options o = inline_options("{}", "not json at all");
  o.base_dir = "/nowhere";
  o.struct_size = offsetof(strata_create_options, base_dir);  // an older, smaller struct
  const Manifest m = load_inline("{}");
  EXPECT_EQ(load_manifest(o).base_dir, m.base_dir);
}

TEST(ManifestParse, MalformedJsonNamesFileLineAndColumn) {
  TempDir dir;
  const auto file = dir.write("bad.json", "{\n  \"train_batch_size\": 8,\n}\n");
  const std::string path = file.string();
  strata_create_options o{};
  o.struct_size = sizeof o;
  o.manifest_path = path.c_str();
  const std::string message = error_of([&] { load_manifest(o); });
  EXPECT_THAT(message, HasSubstr(path + ": malformed JSON at line 3, column 1"));
  EXPECT_THAT(message, Not(HasSubstr("json.exception")));
}

TEST(ManifestParse, TopLevelMustBeAnObject) {
  EXPECT_EQ(error_of([] { load_inline("[1, 2]"); }),
            "<inline manifest>: expected a JSON object at the top level, got [1,2]");
  // An object-valued merge patch would replace the array wholesale; the error must still show.
  EXPECT_EQ(error_of([] { load_inline("[1, 2]", R"({"train_batch_size": 8})"); }),
            "<inline manifest>: expected a JSON object at the top level, got [1,2]");
}

TEST(ManifestKeys, WrongTypeNamesPointerExpectationAndValue) {
  EXPECT_EQ(error_of([] { load_inline(R"({"train_batch_size": "abc"})"); }),
            R"(<inline manifest>: /train_batch_size: expected a positive integer, got "abc")");
  EXPECT_EQ(error_of([] { load_inline(R"({"gradient_accumulation_steps": 0})"); }),
            "<inline manifest>: /gradient_accumulation_steps: expected a positive integer, got 0");
  EXPECT_THAT(error_of([] { load_inline(R"({"train_micro_batch_size_per_gpu": -4})"); }),
              HasSubstr("/train_micro_batch_size_per_gpu: expected a positive integer, got -4"));
  EXPECT_THAT(error_of([] { load_inline(R"({"train_batch_size": 2.5})"); }),
              HasSubstr("got 2.5"));
  EXPECT_THAT(error_of([] { load_inline(R"({"gradient_clipping": -1})"); }),
              HasSubstr("/gradient_clipping: expected a number >= 0, got -1"));
  EXPECT_THAT(error_of([] { load_inline(R"({"zero_optimization": 2})"); }),
              HasSubstr("/zero_optimization: expected an object, got 2"));
  EXPECT_THAT(error_of([] { load_inline(R"({"wall_clock_breakdown": "yes"})"); }),
              HasSubstr(R"(/wall_clock_breakdown: expected true or false, got "yes")"));
}

TEST(ManifestKeys, ReadsBatchKeysAndClipping) {
  const Manifest m = load_inline(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4,
                                     "gradient_accumulation_steps": 2, "gradient_clipping": 1.5})");
  EXPECT_EQ(m.train_batch_size, 64u);
  EXPECT_EQ(m.train_micro_batch_size_per_gpu, 4u);
  EXPECT_EQ(m.gradient_accumulation_steps, 2u);
  EXPECT_DOUBLE_EQ(m.gradient_clipping, 1.5);

  const Manifest defaults = load_inline("{}");
  EXPECT_FALSE(defaults.train_batch_size.has_value());
  EXPECT_FALSE(defaults.train_micro_batch_size_per_gpu.has_value());
  EXPECT_FALSE(defaults.gradient_accumulation_steps.has_value());
  EXPECT_DOUBLE_EQ(defaults.gradient_clipping, 0.0);
}

TEST(ManifestKeys, NullMeansAbsentAsInDeepSpeed) {
  const Manifest m = load_inline(R"({"train_batch_size": null, "fp16": null, "comm": null})");
  EXPECT_FALSE(m.train_batch_size.has_value());
  EXPECT_EQ(m.comm.library, "strata_allreduce_mpi");
}

TEST(ManifestKeys, UnknownStratumIsAnError) {
  EXPECT_EQ(error_of([] { load_inline(R"({"compression": {"library": "x"}})"); }),
            "<inline manifest>: /compression: unknown stratum 'compression' (expected comm, "
            "sharding, precision or offload)");
}

TEST(ManifestKeys, UnknownKeyIsAnError) {
  // Issue 10: a key neither DeepSpeed nor Strata defines is a typo until proven otherwise.
  EXPECT_EQ(error_of([] { load_inline(R"({"my_note": "hello", "train_batch_size": 4})"); }),
            "<inline manifest>: /my_note: unknown key (neither DeepSpeed nor Strata defines it)");
}

TEST(ManifestStrata, DefaultsWhenSectionsAreAbsent) {
  const Manifest m = load_inline("{}");
  EXPECT_EQ(m.comm.library, "strata_allreduce_mpi");
  EXPECT_EQ(m.sharding.library, "strata_zero");
  EXPECT_EQ(m.precision.library, "strata_amp");
  EXPECT_EQ(m.offload.library, "strata_offload");
  for (const StratumSpec* s : {&m.comm, &m.sharding, &m.precision, &m.offload}) {
    EXPECT_EQ(s->json_path, "/" + s->stratum);
    EXPECT_FALSE(s->sha256.has_value());
    EXPECT_TRUE(s->config.is_object());
  }
}

TEST(ManifestStrata, ReadsLibraryAndNormalisesSha256) {
  const std::string upper(64, 'A');
  const Manifest m = load_inline(R"({"offload": {"library": "./my_opt.so", "sha256": ")" + upper +
                                 R"("}, "comm": {"library": "strata_allreduce_gloo"}})");
  EXPECT_EQ(m.offload.library, "./my_opt.so");
  EXPECT_EQ(m.offload.sha256, std::string(64, 'a'));
  EXPECT_EQ(m.comm.library, "strata_allreduce_gloo");
  EXPECT_EQ(m.sharding.library, "strata_zero");  // a missing key keeps the default
}

TEST(ManifestStrata, SectionErrorsNameTheirPointer) {
  EXPECT_EQ(error_of([] { load_inline(R"({"comm": {"library": 3}})"); }),
            "<inline manifest>: /comm/library: expected a non-empty string (a plugin name or a "
            "path), got 3");
  EXPECT_THAT(error_of([] { load_inline(R"({"comm": {"library": ""}})"); }),
              HasSubstr("/comm/library: expected a non-empty string"));
  EXPECT_THAT(error_of([] { load_inline(R"({"offload": {"sha256": "abc"}})"); }),
              HasSubstr(R"(/offload/sha256: expected 64 hexadecimal digits, got "abc")"));
  EXPECT_THAT(error_of([] { load_inline(R"({"sharding": {"config": [1]}})"); }),
              HasSubstr("/sharding/config: expected an object, got [1]"));
  EXPECT_EQ(error_of([] { load_inline(R"({"precision": {"libary": "x"}})"); }),
            "<inline manifest>: /precision/libary: unknown key (expected library, sha256 or "
            "config)");
  EXPECT_THAT(error_of([] { load_inline(R"({"comm": "mpi"})"); }),
              HasSubstr(R"(/comm: expected an object with "library", "sha256" or "config", got "mpi")"));
}

TEST(ManifestOverrides, MergePatchAppliesBeforeValidation) {
  const Manifest m = load_inline(R"({"train_batch_size": 8, "fp16": {"enabled": true}})",
                                 R"({"train_batch_size": 32, "fp16": null})");
  EXPECT_EQ(m.train_batch_size, 32u);
  EXPECT_FALSE(m.json.contains("fp16"));

  EXPECT_THAT(error_of([] { load_inline("{}", R"({"train_batch_size": "x"})"); }),
              HasSubstr(R"(/train_batch_size: expected a positive integer, got "x")"));
}

TEST(ManifestOverrides, MalformedOverridesAreNamed) {
  EXPECT_THAT(error_of([] { load_inline("{}", "{oops"); }),
              HasSubstr("<inline manifest>: overrides: malformed JSON at line 1, column 2"));
  EXPECT_EQ(error_of([] { load_inline("{}", "[1]"); }),
            "<inline manifest>: overrides: expected a JSON object (a merge patch), got [1]");
}

}  // namespace
}  // namespace strata::rt::test
