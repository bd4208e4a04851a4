// Gloo reports failures as exceptions of two unrelated families: gloo::Exception (a
// std::runtime_error; IoException when a peer closed its connection or a wait timed out) and
// gloo::EnforceNotMet (only a std::exception) for broken invariants. translate() turns both, and
// any other std::exception, into sdk::Error(STRATA_ERR_COMM) with `what` in front, so that nothing
// Gloo throws escapes the plugin or terminates the process.
#pragma once

#include <strata/plugin.hpp>

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

#include <string>

namespace strata::allreduce_gloo {

template <class Body>
auto translate(const std::string& what, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const sdk::Error&) {
    throw;  // already ours, with its status
  } catch (const gloo::IoException& e) {
    sdk::fail(STRATA_ERR_COMM, what + ": a peer failed or timed out: " + e.what());
  } catch (const gloo::Exception& e) {
    sdk::fail(STRATA_ERR_COMM, what + ": " + e.what());
  } catch (const gloo::EnforceNotMet& e) {
    sdk::fail(STRATA_ERR_COMM, what + ": gloo check failed: " + e.what());
  } catch (const std::exception& e) {
    sdk::fail(STRATA_ERR_COMM, what + ": " + e.what());
  }
}

}  // namespace strata::allreduce_gloo
