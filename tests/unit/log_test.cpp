// The runtime logger: rank tag, level names, STRATA_LOG_LEVEL.
#include "log.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <cstdlib>
#include <sstream>

namespace strata::rt {
namespace {

TEST(Log, LinesCarryTheRankAndLevel) {
  const auto level = logger().level();
  logger().set_level(spdlog::level::info);
  std::ostringstream captured;
  logger().sinks().push_back(std::make_shared<spdlog::sinks::ostream_sink_st>(captured));
  set_log_rank(3);  // sets the pattern on every sink, the captured one included
  logger().info("hello {}", 42);
  set_log_rank(0);
  logger().warn("careful");
  logger().sinks().pop_back();
  logger().set_level(level);
  EXPECT_EQ(captured.str(), "[strata rank 3] [info] hello 42\n[strata rank 0] [warning] careful\n");
}

// Run by ctest with STRATA_LOG_LEVEL set and STRATA_TEST_EXPECT_LEVEL naming the level it should
// produce (see CMakeLists.txt); skipped when run without it.
TEST(LogLevel, FromEnvironment) {
  const char* expect = std::getenv("STRATA_TEST_EXPECT_LEVEL");
  if (expect == nullptr) GTEST_SKIP() << "run through ctest";
  EXPECT_EQ(spdlog::level::to_string_view(logger().level()), spdlog::string_view_t(expect));
}

}  // namespace
}  // namespace strata::rt
