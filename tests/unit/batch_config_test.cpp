// DeepSpeed's batch-size rules: every combination of given keys, and the relation errors.
#include "test_util.hpp"

#include <gmock/gmock.h>

namespace strata::rt::test {
namespace {

using ::testing::HasSubstr;

Manifest batch_manifest(std::optional<uint64_t> train, std::optional<uint64_t> micro,
                        std::optional<uint64_t> accum) {
  Manifest m;
  m.source = "ds.json";
  m.train_batch_size = train;
  m.train_micro_batch_size_per_gpu = micro;
  m.gradient_accumulation_steps = accum;
  return m;
}

struct Case {
  const char* name;
  std::optional<uint64_t> train, micro, accum;
  int world;
  uint64_t want_train, want_micro, want_accum;
};

// Keeps gtest from printing the struct's bytes in test names and failures.
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class BatchResolves : public ::testing::TestWithParam<Case> {};

TEST_P(BatchResolves, AsDeepSpeedDoes) {
  const Case& c = GetParam();
  const BatchConfig b = resolve_batch(batch_manifest(c.train, c.micro, c.accum), c.world);
  EXPECT_EQ(b.train_batch_size, c.want_train);
  EXPECT_EQ(b.micro_batch_size, c.want_micro);
  EXPECT_EQ(b.gradient_accumulation_steps, c.want_accum);
  EXPECT_EQ(b.micro_batch_size * b.gradient_accumulation_steps * static_cast<uint64_t>(c.world),
            b.train_batch_size);
}

constexpr auto none = std::nullopt;

INSTANTIATE_TEST_SUITE_P(
    DeepSpeedRules, BatchResolves,
    ::testing::Values(Case{"all_three", 64, 4, 4, 4, 64, 4, 4},
                      Case{"train_and_micro", 64, 4, none, 4, 64, 4, 4},
                      Case{"train_and_accum", 64, none, 2, 4, 64, 8, 2},
                      Case{"micro_and_accum", none, 4, 2, 3, 24, 4, 2},
                      Case{"train_only", 64, none, none, 4, 64, 16, 1},
                      Case{"micro_only", none, 8, none, 2, 16, 8, 1},
                      Case{"single_rank", 32, none, none, 1, 32, 32, 1},
                      Case{"accum_from_train_micro_one_rank", 12, 3, none, 1, 12, 3, 4}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(BatchErrors, NeitherTrainNorMicroGiven) {
  EXPECT_EQ(error_of([] { resolve_batch(batch_manifest(none, none, 4), 2); }),
            "ds.json: Either train_batch_size or train_micro_batch_size_per_gpu needs to be "
            "provided");
}

TEST(BatchErrors, InconsistentTripleStatesTheRelation) {
  EXPECT_EQ(error_of([] { resolve_batch(batch_manifest(100, 16, 2), 4); }),
            "ds.json: train_batch_size 100 != train_micro_batch_size_per_gpu 16 * "
            "gradient_accumulation_steps 2 * world size 4 (= 128)");
}

TEST(BatchErrors, DerivedAccumulationThatDoesNotDivide) {
  // 60 / 4 / 4 = 3 by integer division, and 4 * 3 * 4 = 48 != 60.
  const std::string message = error_of([] { resolve_batch(batch_manifest(60, 4, none), 4); });
  EXPECT_THAT(message, HasSubstr("train_batch_size 60 != train_micro_batch_size_per_gpu 4 * "
                                 "gradient_accumulation_steps 3 * world size 4 (= 48)"));
  EXPECT_THAT(message, HasSubstr("derived by integer division: gradient_accumulation_steps"));
}

TEST(BatchErrors, DerivedMicroBatchOfZero) {
  // Only train given: micro = 2 / 4 = 0, which DeepSpeed rejects too.
  EXPECT_THAT(error_of([] { resolve_batch(batch_manifest(2, none, none), 4); }),
              HasSubstr("train_batch_size 2 != train_micro_batch_size_per_gpu 0 * "
                        "gradient_accumulation_steps 1 * world size 4 (= 0)"));
  // Train and accumulation given: micro = 8 / 4 / 4 = 0.
  EXPECT_THAT(error_of([] { resolve_batch(batch_manifest(8, none, 4), 4); }),
              HasSubstr("train_micro_batch_size_per_gpu 0"));
}

TEST(BatchErrors, DerivedMicroBatchThatDoesNotDivide) {
  EXPECT_THAT(error_of([] { resolve_batch(batch_manifest(10, none, none), 4); }),
              HasSubstr("train_batch_size 10 != train_micro_batch_size_per_gpu 2 * "
                        "gradient_accumulation_steps 1 * world size 4 (= 8)"));
}

TEST(BatchErrors, WorldSizeChangesTheVerdict) {
  // The same manifest is right for 2 ranks and wrong for 4: the check must use the real world.
  EXPECT_NO_THROW(resolve_batch(batch_manifest(32, 8, 2), 2));
  EXPECT_THAT(error_of([] { resolve_batch(batch_manifest(32, 8, 2), 4); }),
              HasSubstr("world size 4 (= 64)"));
}

TEST(BatchErrors, ReadFromAManifestDocument) {
  const Manifest m = load_inline(R"({"train_batch_size": 100, "train_micro_batch_size_per_gpu": 16,
                                     "gradient_accumulation_steps": 2})");
  EXPECT_EQ(error_of([&] { resolve_batch(m, 4); }),
            "<inline manifest>: train_batch_size 100 != train_micro_batch_size_per_gpu 16 * "
            "gradient_accumulation_steps 2 * world size 4 (= 128)");
}

}  // namespace
}  // namespace strata::rt::test
