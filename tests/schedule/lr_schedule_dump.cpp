// lr_schedule_dump '<scheduler block JSON>' <optimizer lr> <optimizer momentum|nan> <N>
// Prints "iteration lr momentum" (17 significant digits; momentum "nan" when the schedule leaves
// it alone) for last_batch_iteration = -1..N, one line each. Errors go to stderr, exit status 1.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "schedule/lr_schedule.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s '<scheduler block JSON>' <lr> <momentum|nan> <N>\n", argv[0]);
    return 2;
  }
  try {
    const nlohmann::json block = nlohmann::json::parse(argv[1]);
    const strata::rt::OptimizerDefaults defaults{std::strtod(argv[2], nullptr),
                                                 std::strtod(argv[3], nullptr)};
    const long long n = std::stoll(argv[4]);
    const auto schedule = strata::rt::make_lr_schedule(block, "<argv>", defaults);
    for (long long i = -1; i <= n; ++i) {
      std::printf("%lld %.17g %.17g\n", i, schedule->lr(i), schedule->momentum(i));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
