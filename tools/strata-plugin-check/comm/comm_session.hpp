// One live instance of the comm plugin under test, its caps, and the calls the checks make
// through it. Every function here is local: the collectives are whatever the caller runs.
#pragma once

#include "call_buffers.hpp"
#include "comm_reference.hpp"

#include "check.hpp"
#include "plugin_instance.hpp"

#include <strata/plugin_api.h>

#include <functional>
#include <string>
#include <vector>

namespace strata::plugin_check::comm {

using CollectiveFn = strata_status (*)(void*, const strata_coll_args*, strata_request*,
                                       strata_error*);

// The ops table's functions, read only where the table's header says they exist (an older, smaller
// table has no later members).
struct CommFunctions {
  const strata_comm_ops* ops = nullptr;
  explicit CommFunctions(const strata_comm_ops& table) : ops(&table) {}
  CollectiveFn collective(int32_t which) const;  // strata_collective; NULL when absent
  decltype(strata_comm_ops::wait) wait() const;
  decltype(strata_comm_ops::test) test() const;
  decltype(strata_comm_ops::split) split() const;  // ABI 1.10; NULL when absent
};

// The result of one plugin call: its status and message.
struct CallResult {
  strata_status status = STRATA_OK;
  std::string message;
  bool ok() const { return status == STRATA_OK; }
  std::string text() const;  // "STRATA_ERR_MISMATCH: <message>"
};

// An instance of the comm plugin under test (plugin_instance.hpp).
using CommInstance = Instance<strata_comm_ops>;

enum class Mode { Blocking, Nonblocking };
const char* mode_name(Mode mode);

// What the checks need to call an instance: its functions, caps, and the memory the checks put
// their buffers in (host memory, or the device for the device checks and for a plugin that
// claims device memory only).
struct Session {
  CommFunctions fns;
  void* self = nullptr;
  strata_comm_caps caps{};
  Memory memory{};

  int rank() const { return caps.rank; }
  int size() const { return caps.size; }
  // A collective counts as claimed when its caps bit is set and its function is there (the
  // header: the runtime clears a bit whose function is NULL).
  bool claims(int32_t collective) const;
  // The same for caps.features' STRATA_COMM_FEATURE_SPLIT and split() (ABI 1.10).
  bool claims_split() const;
  bool claims_dtype(int32_t dtype) const;
  // Whether caps.device_mask says it moves memory of `device_type` (a strata_device_type). No bit
  // at all reads as host memory only, as the runtime reads it: plugins written before anything
  // read the field left it 0.
  bool claims_memory(int32_t device_type) const;
  // Whether the caps claim the memory this session's buffers are in.
  bool memory_claimed() const { return claims_memory(memory.device.type); }
  // Blocking always; non-blocking too when the caps say so.
  std::vector<Mode> modes() const;
  // A dtype every rank can move rank ids and raw bytes in: the first claimed of u8, i32, i64,
  // f64, f32, f16, bf16 (-1 if none is).
  int32_t carrier_dtype() const;
  // The dtype for checks that need just one: the first claimed of f32, f64, i32, i64, f16, bf16,
  // u8 (-1 if none is).
  int32_t primary_dtype() const;

  // Runs one collective. Blocking: req = NULL. Non-blocking: starts it, asks test() once where
  // the plugin has it (polling is the ordering check's), then waits.
  CallResult run(int32_t collective, const strata_coll_args& args, Mode mode) const;
  // As run(), then, when it succeeded, `buffers`' results copied back into their host Bytes.
  CallResult run(int32_t collective, const strata_coll_args& args, Mode mode,
                 CallBuffers& buffers) const;
  // The buffers of one call, in this session's memory.
  CallBuffers buffers() const { return CallBuffers(memory); }
  // Starts a collective: non-blocking when req != NULL (*req set on success).
  CallResult start(int32_t collective, const strata_coll_args& args, strata_request* req) const;
  CallResult wait(strata_request req) const;
  // test() once (*done = 0 and OK when there is no test()).
  CallResult test_once(strata_request req, int32_t* done) const;
  // Polls test() until it reports done (OK at once when there is no test()).
  CallResult poll_until_done(strata_request req) const;

  // Every rank's `bytes_per_rank` bytes, gathered with allgather in the carrier dtype
  // (rank r's at r * bytes_per_rank). Empty with a failed CallResult on error.
  CallResult gather_bytes(const Bytes& mine, Bytes& all) const;
};

strata_coll_args coll_args(const strata_buffer* send, const strata_buffer* recv);

// Keeps the first difference a check body notes; the body goes on through all its collectives.
class FirstDifference {
 public:
  void note(const std::string& difference) {
    if (first_.empty()) first_ = difference;
  }
  bool found() const { return !first_.empty(); }
  Verdict verdict(std::string pass_note = {}) const {
    return first_.empty() ? Verdict::pass(std::move(pass_note)) : Verdict::fail(first_);
  }

 private:
  std::string first_;
};

// Notes, under `where` ("count 7, non-blocking, in place"), the plugin's error if the call failed,
// else the first element of `got` that differs from `expected` ("element 3: expected 4, got 5").
// `element_note`, if given, says what element i is (" (a gap: must stay untouched)").
void compare(FirstDifference& diff, const std::string& where, const CallResult& result,
             const Bytes& got, const Bytes& expected, int32_t dtype,
             const std::function<std::string(uint64_t)>& element_note = {});

}  // namespace strata::plugin_check::comm
