// strata_common_config (plugins/common/config): the one way the tree's plugins read their JSON
// config. Every error names the key's path and what was expected; unknown keys are refused with
// the known ones and the nearest; null is absent or refused as the reader is told.
#include <gtest/gtest.h>
#include <strata/plugin.hpp>
#include <strata_common/config_reader.hpp>

#include <cstdint>
#include <functional>
#include <string>

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

}  // namespace
}  // namespace strata::common::config
