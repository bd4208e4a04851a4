// gtest main for the multi-rank strata_zero tests: every rank runs the same tests in the same
// order (so collectives match) around one comm plugin instance.
#include "zero_test_support.hpp"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new strata::zero_test::CommEnvironment);
  return RUN_ALL_TESTS();
}
