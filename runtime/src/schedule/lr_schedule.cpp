#include "schedule/lr_schedule.hpp"

#include <limits>

namespace strata::rt {

double LrSchedule::momentum(int64_t) const { return std::numeric_limits<double>::quiet_NaN(); }
double LrSchedule::beta2(int64_t) const { return std::numeric_limits<double>::quiet_NaN(); }

}  // namespace strata::rt
