// The one exception type strata-run throws for a problem the user can fix (a bad option, a host
// line that does not parse). main() prints it as one "error: " line and exits 1, which is also what
// the bad-input catalogue looks for.
#pragma once

#include <stdexcept>
#include <string>

namespace strata::run {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace strata::run
