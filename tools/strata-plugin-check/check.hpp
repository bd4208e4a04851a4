// What every stratum's conformance checks share: the library under test, and the Recorder that
// writes one line per check as it runs.
//
// A check is one named property ("allreduce.f32.sum", "loss_scale.sequence.growth"). Its body
// returns a Verdict: pass, fail with the FIRST difference it found (what was expected, what came,
// where), or skip with why (the caps do not claim it). A body may also throw: an exception is a
// failure whose detail is its message. Names are dotted, lower case, without spaces; the
// stratum's prefix ("comm.", "sharding.", ...) and, for multi-rank runs, the world size
// ("np2.") are added by the caller, not by the check.
//
// A fourth verdict, cannot_run, comes only from a stratum's first check (comm and sharding
// "caps", precision and offload "create"): create answered STRATA_ERR_UNSUPPORTED to the
// checker's config, which says this machine lacks what the plugin needs (the NCCL plugin without
// a CUDA device). It is neither a pass nor a failure: the stratum's other checks are not run, and
// the checker exits 2.
#pragma once

#include <strata/plugin_api.h>

#include <functional>
#include <string>
#include <string_view>

namespace strata::plugin_check {

enum class Outcome { Pass, Fail, Skip, CannotRun };

struct Verdict {
  Outcome outcome = Outcome::Pass;
  std::string detail;  // Fail: the first difference; Skip, CannotRun: why; Pass: empty or a note

  static Verdict pass(std::string note = {}) { return {Outcome::Pass, std::move(note)}; }
  static Verdict fail(std::string first_difference) {
    return {Outcome::Fail, std::move(first_difference)};
  }
  static Verdict skip(std::string why) { return {Outcome::Skip, std::move(why)}; }
  static Verdict cannot_run(std::string plugins_reason) {
    return {Outcome::CannotRun, std::move(plugins_reason)};
  }
};

// The plugin library under test, loaded in this process (library.hpp).
struct Target {
  std::string path;          // absolute path of the library
  std::string config_json;   // --config: the plugin's config object as JSON text ("{}" if none)
  bool config_given = false; // whether --config was passed (checks may then skip their own
                             // config variants and use only this one)
  const strata_plugin_descriptor* descriptor = nullptr;
  template <class Ops>
  const Ops& ops() const { return *static_cast<const Ops*>(descriptor->ops); }
};

// Writes check lines to one file (or stdout), flushed line by line, so that the parent process
// knows which check was running when a worker hung or died. Runs each check under a watchdog:
// a check still running after the per-check limit is recorded as failed ("still running after
// N s") and the process exits with status 3, because a plugin that hangs cannot be recovered.
class Recorder {
 public:
  virtual ~Recorder() = default;
  // Runs `body` as check `name` and records its verdict. Returns true unless it failed.
  virtual bool run(std::string_view name, const std::function<Verdict()>& body) = 0;
  // Records a check without running anything (e.g. a whole group skipped by the caps).
  virtual void record(std::string_view name, const Verdict& verdict) = 0;
};

// Each stratum's checks. Comm and sharding run inside every rank of a job the parent launched
// (world sizes 1..N, one job per size; every rank runs the same checks in the same order and
// records its own verdicts, which the parent merges). Precision and offload run in one process.
void check_comm(const Target& target, Recorder& recorder);
void check_sharding(const Target& target, Recorder& recorder);
void check_precision(const Target& target, Recorder& recorder);
void check_offload(const Target& target, Recorder& recorder);

}  // namespace strata::plugin_check
