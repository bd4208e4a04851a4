// strata_common_config (plugins/common/config): the one way the tree's plugins read their JSON
// config. Every error names the key's path and what was expected; unknown keys are refused with
// the known ones and the nearest; null is absent or refused as the reader is told.
#include <gtest/gtest.h>
#include <strata/plugin.hpp>
#include <strata_common/config_reader.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace strata::common::config {
namespace {

// The message of the sdk::Error a call throws (and that it is INVALID_ARGUMENT); "" if none.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const sdk::Error& e) {
    EXPECT_EQ(e.code(), STRATA_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  return "";
}

TEST(ConfigReader, ParsesAnObjectAndNamesTheContextOtherwise) {
  EXPECT_TRUE(parse_object(nullptr, "comm config").empty());
  EXPECT_TRUE(parse_object("", "comm config").empty());
  EXPECT_EQ(parse_object(R"({"a": 1})", "x")["a"], 1);
  EXPECT_EQ(error_of([] { parse_object("[1, 2]", "comm config"); }),
            "comm config: expected a JSON object, got [1,2]");
  EXPECT_EQ(error_of([] { parse_object(R"({"a": )", "comm config"); }).rfind(
                "comm config: not valid JSON: ", 0),
            0u);
}

TEST(ConfigReader, TypedValuesNameTheKeysPathWithEitherSeparator) {
  const json root = json::parse(R"({"n": -1, "u": 1.5, "b": "yes", "c": "tree", "t": ""})");
  ObjectReader dotted(root, "zero_optimization");
  EXPECT_EQ(error_of([&] { dotted.positive("n", 1); }),
            "zero_optimization.n: expected a positive finite number, got -1");
  ObjectReader colon(root, "comm config", ": ");
  EXPECT_EQ(error_of([&] { colon.unsigned_integer("u", 1, 1, 10, "a positive integer"); }),
            "comm config: u: expected a positive integer, got 1.5");
  EXPECT_EQ(error_of([&] { colon.boolean("b", false); }),
            "comm config: b: expected true or false, got \"yes\"");
  EXPECT_EQ(error_of([&] { colon.choice("c", "ring", {"ring", "bcube"}); }),
            "comm config: c: expected \"ring\" or \"bcube\", got \"tree\"");
  EXPECT_EQ(error_of([&] { colon.choice("c", "auto", {"auto", "mpi", "tcp"}); }),
            "comm config: c: expected \"auto\", \"mpi\" or \"tcp\", got \"tree\"");
  EXPECT_EQ(error_of([&] { colon.text("t", "", "a directory path"); }),
            "comm config: t: expected a directory path, got \"\"");
}

TEST(ConfigReader, AbsentKeysGiveTheFallbackAndBoundsHold) {
  const json root = json::parse(R"({"big": 86400001, "ok": 5})");
  ObjectReader r(root, "c");
  EXPECT_EQ(r.unsigned_integer("missing", 7, 1, 9, "x"), 7u);
  EXPECT_EQ(r.unsigned_integer("ok", 0, 1, 9, "x"), 5u);
  EXPECT_NE(error_of([&] { r.unsigned_integer("big", 1, 1, 86'400'000, "at most a day"); }), "");
  EXPECT_EQ(r.choice("missing2", "ring", {"ring"}), "ring");
  EXPECT_TRUE(r.boolean("missing3", true));
}

TEST(ConfigReader, NullIsAbsentOrRefusedAsTold) {
  const json root = json::parse(R"({"flag": null})");
  ObjectReader absent(root, "block");
  EXPECT_TRUE(absent.boolean("flag", true));
  ObjectReader refused(root, "comm config", ": ", Nulls::refused);
  EXPECT_EQ(error_of([&] { refused.boolean("flag", true); }),
            "comm config: flag: expected true or false, got null");
}

TEST(ConfigReader, UnknownKeysAreRefusedWithTheKnownOnesAndTheNearest) {
  const json root = json::parse(R"({"timout_ms": 5})");
  ObjectReader r(root, "comm config", ": ");
  r.find("timeout_ms");
  r.find("algorithm");
  EXPECT_EQ(error_of([&] { r.reject_unknown(); }),
            "comm config: timout_ms: unknown key; expected one of timeout_ms, algorithm; did you "
            "mean 'timeout_ms'?");
  // Far from every known key: no suggestion; the context follows "unknown key".
  const json far = json::parse(R"({"zzzzzz": 1})");
  ObjectReader lion(far, "optimizer.params");
  lion.find("lr");
  EXPECT_EQ(error_of([&] { lion.reject_unknown(" for lion"); }),
            "optimizer.params.zzzzzz: unknown key for lion; expected one of lr");
  // Every key asked for: nothing to refuse.
  const json one = json::parse(R"({"lr": 1})");
  ObjectReader all(one, "p");
  all.find("lr");
  EXPECT_EQ(error_of([&] { all.reject_unknown(); }), "");
}

TEST(ConfigReader, ANonObjectBlockIsRefused) {
  const json root = json::parse("[1]");
  EXPECT_EQ(error_of([&] { ObjectReader r(root, "offload_param"); }),
            "offload_param: expected an object, got [1]");
}

TEST(ConfigReader, ParseFailuresMayBeWordedAsAPluginsUsersKnowThem) {
  EXPECT_EQ(error_of([] { parse_object(R"({"stage": )", "zero_optimization", "invalid JSON"); })
                .rfind("zero_optimization: invalid JSON: ", 0),
            0u);
}

TEST(ConfigReader, WholeNumbersMayBeWrittenAsIntegralFloats) {
  const json root = json::parse(
      R"({"size": 5e8, "exact": 1000.0, "half": 2.5, "huge": 1e19, "big": 9223372036854775807,
          "too_big": 9223372036854775808, "neg": -3, "text": "8"})");
  ObjectReader r(root, "zero_optimization");
  EXPECT_EQ(r.whole_number("size", 0, 1, INT64_MAX, "a positive integer"), 500'000'000);
  EXPECT_EQ(r.whole_number("exact", 0, 0, INT64_MAX, "x"), 1000);
  EXPECT_EQ(r.whole_number("big", 0, 0, INT64_MAX, "x"), INT64_MAX);
  EXPECT_EQ(r.whole_number("neg", 0, INT64_MIN, INT64_MAX, "an integer"), -3);
  EXPECT_EQ(r.whole_number("missing", 7, 0, 1, "x"), 7);
  EXPECT_EQ(error_of([&] { r.whole_number("half", 0, 0, 10, "an integer"); }),
            "zero_optimization.half: expected an integer, got 2.5");
  EXPECT_EQ(error_of([&] { r.whole_number("huge", 0, 0, INT64_MAX, "an integer"); }),
            "zero_optimization.huge: expected an integer, got 1e+19");
  EXPECT_NE(error_of([&] { r.whole_number("too_big", 0, 0, INT64_MAX, "x"); }), "");
  EXPECT_EQ(error_of([&] { r.whole_number("neg", 0, 0, 3, "0, 1, 2 or 3"); }),
            "zero_optimization.neg: expected 0, 1, 2 or 3, got -3");
  // A number written as a string is refused unless the reader accepts those.
  EXPECT_EQ(error_of([&] { r.whole_number("text", 0, 0, 10, "an integer"); }),
            "zero_optimization.text: expected an integer, got \"8\"");
}

TEST(ConfigReader, NumbersAsStringsWhereTheReaderAcceptsThem) {
  const json root = json::parse(
      R"({"power": "8", "scale": "0.5", "inf": "inf", "bad": "8x", "empty": "", "frac": "2.5"})");
  ObjectReader r(root, "fp16", ".", Nulls::absent, NumberStrings::accepted);
  EXPECT_EQ(r.whole_number("power", 0, -126, 127, "x"), 8);
  EXPECT_EQ(r.positive("scale", 1), 0.5);
  EXPECT_EQ(error_of([&] { r.positive("inf", 1); }),
            "fp16.inf: expected a positive finite number, got \"inf\"");
  EXPECT_EQ(error_of([&] { r.positive("bad", 1); }),
            "fp16.bad: expected a positive finite number, got \"8x\"");
  EXPECT_NE(error_of([&] { r.positive("empty", 1); }), "");
  EXPECT_EQ(error_of([&] { r.whole_number("frac", 0, 0, 9, "an integer"); }),
            "fp16.frac: expected an integer, got \"2.5\"");
  // unsigned_integer stays a JSON integer only.
  EXPECT_NE(error_of([&] { r.unsigned_integer("power", 0, 0, 9, "x"); }), "");
}

TEST(ConfigReader, ChoicesMayHaveUnlistedSynonyms) {
  const json root = json::parse(R"({"a": "half", "b": "fp16", "c": "fp8"})");
  ObjectReader r(root, "");
  const std::vector<std::pair<std::string, std::string>> synonyms = {{"half", "fp16"}};
  EXPECT_EQ(r.choice("a", "", {"fp32", "fp16"}, synonyms), "fp16");
  EXPECT_EQ(r.choice("b", "", {"fp32", "fp16"}, synonyms), "fp16");
  EXPECT_EQ(error_of([&] { r.choice("c", "", {"fp32", "fp16"}, synonyms); }),
            R"(c: expected "fp32" or "fp16", got "fp8")");
  EXPECT_EQ(either({"a"}), "a");
  EXPECT_EQ(either({"a", "b", "c"}), "a, b or c");
}

TEST(ConfigReader, NestedObjectsAreReadersNamedUnderTheirKey) {
  const json root = json::parse(R"({"fp16": {"enabled": true, "lost": 1}, "bf16": true})");
  ObjectReader top(root, "");
  ObjectReader fp16 = top.object("fp16");
  EXPECT_TRUE(fp16.boolean("enabled", false));
  EXPECT_EQ(error_of([&] { fp16.reject_unknown(); }),
            "fp16.lost: unknown key; expected one of enabled");
  EXPECT_EQ(error_of([&] { top.object("bf16"); }), "bf16: expected an object, got true");
  ObjectReader absent = top.object("missing");
  EXPECT_FALSE(absent.boolean("enabled", false));
  EXPECT_EQ(absent.path("enabled"), "missing.enabled");
  // Every key of the root asked for: nothing unknown there.
  EXPECT_EQ(error_of([&] { top.reject_unknown(); }), "");
}

TEST(ConfigReader, OptionalKeysTakeNullInAReaderThatRefusesIt) {
  const json root = json::parse(
      R"({"flag": null, "dtype": null, "block": null, "bad_flag": "yes", "bad_dtype": 16,
          "bad_block": 3, "strict_block": null, "on": false, "bf": "bf16"})");
  ObjectReader r(root, "zero_optimization", ".", Nulls::refused);
  EXPECT_EQ(r.boolean_or_null("flag"), std::nullopt);
  EXPECT_EQ(r.boolean_or_null("on"), false);
  EXPECT_EQ(r.choice_or_null("dtype", {"fp32", "bf16"}), std::nullopt);
  EXPECT_EQ(r.choice_or_null("bf", {"fp32", "bf16"}), "bf16");
  EXPECT_EQ(r.object_or_null("block").boolean("x", true), true);
  EXPECT_EQ(error_of([&] { r.boolean_or_null("bad_flag"); }),
            "zero_optimization.bad_flag: expected true, false or null, got \"yes\"");
  EXPECT_EQ(error_of([&] { r.choice_or_null("bad_dtype", {"fp32", "fp16", "bf16"}); }),
            R"(zero_optimization.bad_dtype: expected "fp32", "fp16", "bf16" or null, got 16)");
  EXPECT_EQ(error_of([&] { r.object_or_null("bad_block"); }),
            "zero_optimization.bad_block: expected an object or null, got 3");
  // Where the field is not optional, null stays refused.
  EXPECT_EQ(error_of([&] { r.object("strict_block"); }),
            "zero_optimization.strict_block: expected an object, got null");
  EXPECT_EQ(error_of([&] { r.boolean("flag", true); }),
            "zero_optimization.flag: expected true or false, got null");
}

TEST(ConfigReader, BooleanOrAutoReadsAbsentAndAutoAsNoAnswer) {
  const json root = json::parse(
      R"({"on": true, "off": false, "auto": "auto", "yes": "yes", "one": 1, "null": null})");
  ObjectReader r(root, "comm config", ": ", Nulls::refused);
  EXPECT_EQ(r.boolean_or_auto("on"), true);
  EXPECT_EQ(r.boolean_or_auto("off"), false);
  EXPECT_EQ(r.boolean_or_auto("auto"), std::nullopt);
  EXPECT_EQ(r.boolean_or_auto("absent"), std::nullopt);
  EXPECT_EQ(error_of([&] { r.boolean_or_auto("yes"); }),
            R"(comm config: yes: expected true, false or "auto", got "yes")");
  EXPECT_EQ(error_of([&] { r.boolean_or_auto("one"); }),
            R"(comm config: one: expected true, false or "auto", got 1)");
  EXPECT_EQ(error_of([&] { r.boolean_or_auto("null"); }),
            R"(comm config: null: expected true, false or "auto", got null)");
}

TEST(ConfigReader, ALongListOfKnownKeysIsLeftOutButTheNearestIsNamed) {
  const json root = json::parse(R"({"kee_10": 1})");
  ObjectReader r(root, "zero_optimization");
  for (int i = 0; i < 17; ++i) r.find("key_" + std::to_string(i));
  EXPECT_EQ(error_of([&] { r.reject_unknown(" (no such field)"); }),
            "zero_optimization.kee_10: unknown key (no such field); did you mean 'key_10'?");
  ObjectReader sixteen(root, "p");
  for (int i = 0; i < 16; ++i) sixteen.find("k" + std::to_string(i));
  EXPECT_EQ(error_of([&] { sixteen.reject_unknown(); })
                .find("p.kee_10: unknown key; expected one of k0, k1, "),
            0u);
}

}  // namespace
}  // namespace strata::common::config
