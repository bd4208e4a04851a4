// The runtime the engine tests drive through the host C API: created from an inline manifest,
// destroyed at the end of the test; `err` holds the last call's message. Each test file derives
// its own Runtime with the registration helpers it needs.
#pragma once

#include <strata/strata.h>

#include <gtest/gtest.h>

#include <string>

namespace strata_test {

struct CRuntime {
  strata_runtime* rt = nullptr;
  strata_error err{sizeof(strata_error), 0, {}};
  explicit CRuntime(const std::string& json) {
    strata_create_options options{};
    options.struct_size = sizeof(options);
    options.manifest_json = json.c_str();
    if (strata_create(&options, &rt, &err) != STRATA_OK) ADD_FAILURE() << err.message;
  }
  ~CRuntime() { strata_destroy(rt); }
  CRuntime(const CRuntime&) = delete;
  CRuntime& operator=(const CRuntime&) = delete;

  // One strata_step that must succeed.
  strata_step_result step() {
    strata_step_result r{};
    r.struct_size = sizeof(r);
    EXPECT_EQ(strata_step(rt, &r, &err), STRATA_OK) << err.message;
    return r;
  }
  std::string message() const { return err.message; }
};

}  // namespace strata_test
