// One training run through libstrata (the host C API, via the SDK's strata::Runtime), as a small
// training host would drive it: a manifest built in memory with the in-tree comm, precision and
// offload plugins and the given sharding library, the synthetic model registered, N optimizer
// steps of deterministic gradients, and the parameters read back after every step.
//
// Every rank makes the same runtime calls in the same order whatever it observes: a contract
// breach seen on one rank only (a view without data, a wrong count, no lent gradient buffer) is
// noted in `problem` and the run goes on, so no rank is left alone in a collective. Failed
// runtime calls throw (strata::Error); the runtime makes those agree across ranks (or ends the
// job, naming the rank).
#pragma once

#include "sharding/synthetic_model.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace strata::plugin_check::sharding {

// Where the in-tree plugins around the sharding library are (absolute paths).
struct Libraries {
  std::string comm;
  std::string precision;
  std::string offload;
  std::string zero;  // the reference sharding plugin
};

struct RunSpec {
  std::string sharding_library;  // absolute path
  std::string sharding_config;   // the sharding section's "config", JSON object text
  nlohmann::json optimizer;      // DeepSpeed's "optimizer" block
  uint64_t accumulation = 1;     // gradient_accumulation_steps (micro-batch 1 per rank)
  double clipping = 0;           // gradient_clipping; 0: off
  uint64_t steps = 8;
  // Groups: one per few parameters, gradients lent by the runtime (registered with grad NULL),
  // read and written only through views between gather and release. Otherwise the host owns
  // the gradient buffers and defines no group.
  bool groups = false;
  // With groups: the values forward must read at each step (expected[s] before step s + 1,
  // expected[0] the initial values); nullptr: not checked.
  const std::vector<Values>* expected = nullptr;
};

struct StepRecord {
  Values values;          // after the step
  double grad_norm = 0;   // strata_step_result.grad_norm
  int32_t outcome = 0;    // strata_step_outcome
};

struct RunResult {
  int rank = 0;
  int world_size = 1;
  std::vector<StepRecord> steps;
  std::string problem;       // the first contract breach this rank saw; empty if none
  uint64_t problem_step = 0;  // the step (1-based) during which it was seen
};

RunResult train(const Libraries& libraries, const RunSpec& spec);

}  // namespace strata::plugin_check::sharding
