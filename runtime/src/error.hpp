// The runtime's one exception type: a status code plus a finished one-line sentence that names
// the file, JSON path, plugin or rank concerned. The C API turns it into a strata_error.
#pragma once

#include <strata/plugin_api.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace strata::rt {

class Error : public std::runtime_error {
 public:
  Error(strata_status code, const std::string& message) : std::runtime_error(message), code_(code) {}
  strata_status code() const noexcept { return code_; }

 private:
  strata_status code_;
};

// The sentence for the current errno, for messages about a failed system call.
inline std::string errno_text() { return std::strerror(errno); }

}  // namespace strata::rt
