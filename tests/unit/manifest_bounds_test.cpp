// Issue 10's manifest hardening: size and depth bounds, out-of-range numbers named by key,
// unknown keys as errors with a suggestion, warnings for DeepSpeed keys Strata does not act on,
// and Strata's own stall_inspector and max_consecutive_skips (with their environment overrides).
#include "manifest/key_suggestion.hpp"
#include "log.hpp"
#include "manifest/manifest_text.hpp"
#include "test_util.hpp"

#include <gmock/gmock.h>
#include <spdlog/sinks/ostream_sink.h>

#include <array>
#include <sstream>

namespace strata::rt::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The runtime's log lines written while `body` runs.
std::string logged(const std::function<void()>& body) {
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(captured);
  logger().sinks().push_back(sink);
  try {
    body();
  } catch (...) {
    logger().sinks().pop_back();
    throw;
  }
  logger().sinks().pop_back();
  return captured.str();
}

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(ManifestBounds, TooLargeIsRefusedWithoutEchoingIt) {
  const std::string big = "{\"x\": \"" + std::string(kMaxManifestBytes, 'a') + "\"}";
  const std::string message = error_of([&] { load_inline(big); });
  EXPECT_THAT(message, StartsWith("<inline manifest>: manifest is " + std::to_string(big.size()) +
                                  " bytes; the limit is 16777216 bytes (16 MiB)"));
  EXPECT_LT(message.size(), 200u);

  TempDir dir;
  const auto file = dir.write("big.json", big);
  strata_create_options o{};
  o.struct_size = sizeof o;
  const std::string path = file.string();
  o.manifest_path = path.c_str();
  EXPECT_THAT(error_of([&] { load_manifest(o); }), StartsWith(path + ": manifest is "));
  // The overrides are bounded alike.
  EXPECT_THAT(error_of([&] { load_inline("{}", big.c_str()); }),
              StartsWith("<inline manifest>: overrides: manifest is "));
}

TEST(ManifestBounds, DepthLimitIsSixtyFour) {
  EXPECT_NO_THROW(parse_manifest_text(nested(kMaxManifestDepth), "t"));
  std::string path;  // the 65th array is element 0 of the 64th
  for (size_t i = 0; i < kMaxManifestDepth; ++i) path += "/0";
  EXPECT_EQ(error_of([] { parse_manifest_text(nested(kMaxManifestDepth + 1), "t"); }),
            "t: " + path + ": nested more than 64 levels deep (objects and arrays); a manifest needs a handful");
  // Far deeper than any stack would survive in a recursive parser: still one sentence.
  EXPECT_THAT(error_of([] { load_inline("{\"a\": " + nested(1'000'000) + "}"); }),
              HasSubstr("<inline manifest>: /a/0/0/0"));
  // Brackets inside strings are not nesting.
  EXPECT_NO_THROW(load_inline(R"({"optimizer": {"type": "[[[[[[[[[[[[\"{{{{{{{{{{{{{{{"}})"));
}

TEST(ManifestBounds, NumberBeyondADoubleNamesFileAndKey) {
  EXPECT_EQ(error_of([] { load_inline("{\"optimizer\": {\"params\": {\"lr\": 1e400}}}"); }),
            "<inline manifest>: /optimizer/params/lr: number 1e400 is out of range (beyond a "
            "double's largest, about 1.8e308) at line 1, column 33");
  EXPECT_THAT(error_of([] { load_inline("{\"fp16\": {\"x\": [1, 2,\n -1e999]}}"); }),
              HasSubstr("<inline manifest>: /fp16/x/2: number -1e999 is out of range"));
  EXPECT_THAT(error_of([] { load_inline("1e400"); }), HasSubstr("<inline manifest>: (top level): number 1e400"));
  EXPECT_THAT(error_of([] { load_inline("{}", R"({"gradient_clipping": 1E+309})"); }),
              HasSubstr("<inline manifest>: overrides: /gradient_clipping: number 1E+309 is out of range"));
}

TEST(ManifestBounds, IntegerBeyondUint64NamesKey) {
  // nlohmann reads it as a double; where an integer is expected, the key says so.
  EXPECT_EQ(error_of([] { load_inline(R"({"train_batch_size": 18446744073709551616})"); }),
            "<inline manifest>: /train_batch_size: expected a positive integer, got 1.8446744073709552e+19");
  EXPECT_THAT(error_of([] { load_inline(R"({"max_consecutive_skips": 99999999999999999999})"); }),
              HasSubstr("<inline manifest>: /max_consecutive_skips: expected a positive integer"));
}

TEST(ManifestBounds, MalformedJsonKeepsNlohmannsPosition) {
  EXPECT_THAT(error_of([] { load_inline("{\n  \"a\": [1,\n}"); }),
              StartsWith("<inline manifest>: malformed JSON at line 3, column 1: syntax error"));
  EXPECT_THAT(error_of([] { load_inline(""); }), StartsWith("<inline manifest>: malformed JSON at line 1"));
}

TEST(ManifestBounds, LongKeysAreShortenedInMessages) {
  const std::string key(100'000, 'k');
  const std::string message = error_of([&] { load_inline("{\"" + key + "\": 1}"); });
  EXPECT_THAT(message, HasSubstr("unknown key"));
  EXPECT_LT(message.size(), 300u);
}

TEST(KeySuggestion, EditDistanceCountsTranspositionsOnce) {
  EXPECT_EQ(edit_distance("train_batch_szie", "train_batch_size"), 1u);
  EXPECT_EQ(edit_distance("optimiser", "optimizer"), 1u);
  EXPECT_EQ(edit_distance("FP16", "fp16"), 0u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  constexpr std::array<std::string_view, 3> known{"fp16", "bf16", "optimizer"};
  EXPECT_EQ(closest_key("optimzer", known), "optimizer");
  EXPECT_EQ(closest_key("fp61", known), "fp16");
  EXPECT_EQ(closest_key("learning_rate", known), std::nullopt);
  EXPECT_EQ(did_you_mean("bf61", known), "; did you mean bf16?");
  EXPECT_EQ(did_you_mean("zzz", known), "");
}

TEST(ManifestKeys, UnknownTopLevelKeyIsAnErrorWithASuggestion) {
  EXPECT_EQ(error_of([] { load_inline(R"({"train_batch_szie": 8})"); }),
            "<inline manifest>: /train_batch_szie: unknown key; did you mean train_batch_size?");
  EXPECT_EQ(error_of([] { load_inline(R"({"stall_inspecter": {}})"); }),
            "<inline manifest>: /stall_inspecter: unknown key; did you mean stall_inspector?");
  EXPECT_EQ(error_of([] { load_inline(R"({"my_note": null})"); }),
            "<inline manifest>: /my_note: unknown key (neither DeepSpeed nor Strata defines it)");
}

TEST(ManifestKeys, UnusedDeepSpeedKeysWarnByName) {
  const std::string out = logged([] {
    load_inline(R"({"scheduler": {"type": "WarmupLR"}, "checkpoint": {"tag_validation": "Warn"},
                    "dump_state": true, "wall_clock_breakdown": false, "steps_per_print": 10,
                    "tensorboard": {"enabled": false}, "flops_profiler": {"enabled": true},
                    "gradient_clipping": 1.0})");
  });
  // The checkpoint block is Strata's too (dir, save_every, auto_resume): DeepSpeed's keys in it
  // are warned about one by one.
  EXPECT_THAT(out, HasSubstr("<inline manifest>: /checkpoint/tag_validation: ignored: Strata's checkpoints need "
                             "neither tag validation nor a universal conversion"));
  EXPECT_THAT(out, HasSubstr("<inline manifest>: /dump_state: ignored: Strata does not act on this DeepSpeed key"));
  EXPECT_THAT(out, HasSubstr("/flops_profiler: ignored"));
  // Switched off, or acted on: nothing to say.
  EXPECT_THAT(out, Not(HasSubstr("wall_clock_breakdown")));
  EXPECT_THAT(out, Not(HasSubstr("scheduler")));  // acted on (issue 13)
  EXPECT_THAT(out, Not(HasSubstr("steps_per_print")));
  EXPECT_THAT(out, Not(HasSubstr("tensorboard")));
  EXPECT_THAT(out, Not(HasSubstr("gradient_clipping")));
}

TEST(ManifestKeys, OffloadParamBelowStage3IsIgnoredAndDropped) {
  Manifest m;
  const std::string out = logged([&] {
    m = load_inline(R"({"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"},
                                              "offload_optimizer": {"device": "cpu"}}})");
  });
  EXPECT_THAT(out, HasSubstr("<inline manifest>: /zero_optimization/offload_param: ignored below ZeRO "
                             "stage 3 (zero_optimization.stage is 2), as in DeepSpeed"));
  EXPECT_FALSE(m.offload.config.contains("offload_param"));
  EXPECT_TRUE(m.offload.config.contains("offload_optimizer"));

  // At stage 3 it reaches the offload plugin, silently.
  std::string quiet = logged([&] {
    m = load_inline(R"({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}})");
  });
  EXPECT_THAT(quiet, Not(HasSubstr("offload_param")));
  EXPECT_EQ(m.offload.config["offload_param"], nlohmann::json::parse(R"({"device": "cpu"})"));

  // The stage may come from the sharding section; the block from the offload section.
  quiet = logged([&] {
    m = load_inline(R"({"sharding": {"config": {"stage": 3}}, "offload": {"config": {"offload_param": {"device": "cpu"}}}})");
  });
  EXPECT_TRUE(m.offload.config.contains("offload_param"));
  const std::string own = logged([&] {
    m = load_inline(R"({"offload": {"config": {"offload_param": {"device": "cpu"}}}})");
  });
  EXPECT_THAT(own, HasSubstr("/offload/config/offload_param: ignored below ZeRO stage 3 (zero_optimization.stage is 0)"));
  EXPECT_FALSE(m.offload.config.contains("offload_param"));
  // Device none asks for nothing: dropped without a word.
  quiet = logged([&] { m = load_inline(R"({"zero_optimization": {"offload_param": {"device": "none"}}})"); });
  EXPECT_THAT(quiet, Not(HasSubstr("offload_param")));
}

TEST(ManifestStall, DefaultsAndValues) {
  ScopedEnv w("STRATA_STALL_WARNING_SECONDS", nullptr), s("STRATA_STALL_SHUTDOWN_SECONDS", nullptr);
  const Manifest defaults = load_inline("{}");
  EXPECT_DOUBLE_EQ(defaults.stall_warning_seconds, 60.0);
  EXPECT_DOUBLE_EQ(defaults.stall_shutdown_seconds, 300.0);
  EXPECT_EQ(defaults.max_consecutive_skips, 10u);

  const Manifest m = load_inline(R"({"stall_inspector": {"warning_seconds": 2.5, "shutdown_seconds": 0},
                                     "max_consecutive_skips": 3})");
  EXPECT_DOUBLE_EQ(m.stall_warning_seconds, 2.5);
  EXPECT_DOUBLE_EQ(m.stall_shutdown_seconds, 0.0);
  EXPECT_EQ(m.max_consecutive_skips, 3u);
  // Equal is allowed; warning off allows any shutdown.
  EXPECT_NO_THROW(load_inline(R"({"stall_inspector": {"warning_seconds": 5, "shutdown_seconds": 5}})"));
  EXPECT_NO_THROW(load_inline(R"({"stall_inspector": {"warning_seconds": 0, "shutdown_seconds": 1}})"));
}

TEST(ManifestStall, BadValuesNameTheirKey) {
  ScopedEnv w("STRATA_STALL_WARNING_SECONDS", nullptr), s("STRATA_STALL_SHUTDOWN_SECONDS", nullptr);
  EXPECT_EQ(error_of([] { load_inline(R"({"stall_inspector": {"warning_seconds": -1}})"); }),
            "<inline manifest>: /stall_inspector/warning_seconds: expected a number of seconds from 0 "
            "to 1e9 (0 = no warning), got -1");
  EXPECT_EQ(error_of([] { load_inline(R"({"stall_inspector": {"shutdown_seconds": "5"}})"); }),
            "<inline manifest>: /stall_inspector/shutdown_seconds: expected a number of seconds from 0 "
            "to 1e9 (0 = never end the job), got \"5\"");
  EXPECT_EQ(error_of([] { load_inline(R"({"stall_inspector": {"shutdown_second": 5}})"); }),
            "<inline manifest>: /stall_inspector/shutdown_second: unknown key (expected warning_seconds or "
            "shutdown_seconds); did you mean shutdown_seconds?");
  EXPECT_THAT(error_of([] { load_inline(R"({"stall_inspector": 60})"); }),
              HasSubstr("/stall_inspector: expected an object with warning_seconds and shutdown_seconds, got 60"));
  EXPECT_EQ(error_of([] { load_inline(R"({"stall_inspector": {"warning_seconds": 60, "shutdown_seconds": 30}})"); }),
            "<inline manifest>: /stall_inspector: shutdown_seconds 30 (/stall_inspector/shutdown_seconds) "
            "is less than warning_seconds 60 (/stall_inspector/warning_seconds); a stalled job is warned "
            "about before it is ended: make shutdown_seconds >= warning_seconds, or 0 to never end the job");
  EXPECT_EQ(error_of([] { load_inline(R"({"max_consecutive_skips": 0})"); }),
            "<inline manifest>: /max_consecutive_skips: expected a positive integer (non-finite steps in a "
            "row, with no loss scale left to lower, before the run ends), got 0");
  EXPECT_THAT(error_of([] { load_inline(R"({"max_consecutive_skips": 2.5})"); }), HasSubstr("got 2.5"));
}

TEST(ManifestStall, EnvironmentWinsAndIsChecked) {
  {
    ScopedEnv w("STRATA_STALL_WARNING_SECONDS", "0.5"), s("STRATA_STALL_SHUTDOWN_SECONDS", "2");
    const Manifest m = load_inline(R"({"stall_inspector": {"warning_seconds": 100, "shutdown_seconds": 200}})");
    EXPECT_DOUBLE_EQ(m.stall_warning_seconds, 0.5);
    EXPECT_DOUBLE_EQ(m.stall_shutdown_seconds, 2.0);
  }
  for (const char* bad : {"abc", "", "-3", "nan", "inf", "5s", "1e10"}) {
    ScopedEnv w("STRATA_STALL_WARNING_SECONDS", bad);
    EXPECT_EQ(error_of([] { load_inline("{}"); }),
              std::string("<inline manifest>: environment variable STRATA_STALL_WARNING_SECONDS: expected "
                          "a number of seconds from 0 to 1e9 (0 = no warning), got \"") + bad + "\"");
  }
  ScopedEnv s("STRATA_STALL_SHUTDOWN_SECONDS", "30");
  EXPECT_EQ(error_of([] { load_inline(R"({"stall_inspector": {"warning_seconds": 60}})"); }),
            "<inline manifest>: /stall_inspector: shutdown_seconds 30 (STRATA_STALL_SHUTDOWN_SECONDS) is "
            "less than warning_seconds 60 (/stall_inspector/warning_seconds); a stalled job is warned "
            "about before it is ended: make shutdown_seconds >= warning_seconds, or 0 to never end the job");
}

}  // namespace
}  // namespace strata::rt::test
