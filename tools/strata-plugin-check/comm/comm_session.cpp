#include "comm_session.hpp"

#include <strata/plugin.hpp>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <thread>

namespace strata::plugin_check::comm {
namespace {

// Whether the plugin's table (as its header says it was built) holds the member at `offset` of
// `size` bytes: an older plugin's smaller table has no later members, and reading past it is
// reading someone else's memory.
bool table_has(const strata_comm_ops& ops, size_t offset, size_t size) {
  return ops.header.struct_size >= offset + size;
}

#define STRATA_CHECK_COMM_FN(table, member)                                             \
  (table_has(table, offsetof(strata_comm_ops, member), sizeof(strata_comm_ops::member)) \
       ? (table).member                                                                 \
       : nullptr)

CallResult result_of(strata_status status, const strata_error& err) {
  return {status, status == STRATA_OK ? std::string() : std::string(err.message)};
}

}  // namespace

CollectiveFn CommFunctions::collective(int32_t which) const {
  switch (which) {
    case STRATA_COLL_ALLREDUCE: return STRATA_CHECK_COMM_FN(*ops, allreduce);
    case STRATA_COLL_ALLGATHER: return STRATA_CHECK_COMM_FN(*ops, allgather);
    case STRATA_COLL_ALLGATHERV: return STRATA_CHECK_COMM_FN(*ops, allgatherv);
    case STRATA_COLL_REDUCE_SCATTER: return STRATA_CHECK_COMM_FN(*ops, reduce_scatter);
    case STRATA_COLL_BROADCAST: return STRATA_CHECK_COMM_FN(*ops, broadcast);
    case STRATA_COLL_BARRIER: return STRATA_CHECK_COMM_FN(*ops, barrier);
    case STRATA_COLL_ALLTOALLV: return STRATA_CHECK_COMM_FN(*ops, alltoallv);
    default: return nullptr;
  }
}

decltype(strata_comm_ops::wait) CommFunctions::wait() const {
  return STRATA_CHECK_COMM_FN(*ops, wait);
}
decltype(strata_comm_ops::test) CommFunctions::test() const {
  return STRATA_CHECK_COMM_FN(*ops, test);
}
decltype(strata_comm_ops::split) CommFunctions::split() const {
  return STRATA_CHECK_COMM_FN(*ops, split);
}

std::string CallResult::text() const {
  std::string text = status_name(status);
  if (!message.empty()) text += ": " + message;
  return text;
}

const char* mode_name(Mode mode) { return mode == Mode::Blocking ? "blocking" : "non-blocking"; }

bool Session::claims(int32_t collective) const {
  return (caps.collective_mask & STRATA_COLL_BIT(collective)) != 0 &&
         fns.collective(collective) != nullptr;
}

bool Session::claims_split() const {
  return (caps.features & STRATA_COMM_FEATURE_SPLIT) != 0 && fns.split() != nullptr;
}

bool Session::claims_dtype(int32_t dtype) const {
  return (caps.dtype_mask & STRATA_DTYPE_BIT(dtype)) != 0;
}

bool Session::claims_memory(int32_t device_type) const {
  if (caps.device_mask == 0) return device_type == STRATA_DEVICE_HOST;
  return (caps.device_mask & STRATA_DEVICE_BIT(static_cast<unsigned>(device_type))) != 0;
}

std::vector<Mode> Session::modes() const {
  if (caps.nonblocking != 0 && fns.wait() != nullptr) return {Mode::Blocking, Mode::Nonblocking};
  return {Mode::Blocking};
}

int32_t Session::carrier_dtype() const {
  for (int32_t dtype :
       {STRATA_U8, STRATA_I32, STRATA_I64, STRATA_F64, STRATA_F32, STRATA_F16, STRATA_BF16}) {
    if (claims_dtype(dtype)) return dtype;
  }
  return -1;
}

int32_t Session::primary_dtype() const {
  for (int32_t dtype :
       {STRATA_F32, STRATA_F64, STRATA_I32, STRATA_I64, STRATA_F16, STRATA_BF16, STRATA_U8}) {
    if (claims_dtype(dtype)) return dtype;
  }
  return -1;
}

CallResult Session::start(int32_t collective, const strata_coll_args& args,
                          strata_request* req) const {
  const CollectiveFn fn = fns.collective(collective);
  if (fn == nullptr) return {STRATA_ERR_UNSUPPORTED, "the ops table has no such function"};
  strata_error err = sdk::make_error();
  return result_of(fn(self, &args, req, &err), err);
}

CallResult Session::wait(strata_request req) const {
  strata_error err = sdk::make_error();
  return result_of(fns.wait()(self, req, &err), err);
}

CallResult Session::test_once(strata_request req, int32_t* done) const {
  *done = 0;
  const auto test = fns.test();
  if (test == nullptr) return {};
  strata_error err = sdk::make_error();
  return result_of(test(self, req, done, &err), err);
}

CallResult Session::poll_until_done(strata_request req) const {
  if (fns.test() == nullptr) return {};
  // A request that never completes is the Recorder's watchdog's to catch. Polls sleep between
  // tests: a tight loop starves the plugin's progress threads when ranks outnumber cores.
  for (int32_t done = 0;;) {
    CallResult tested = test_once(req, &done);
    if (!tested.ok() || done != 0) return tested;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

CallResult Session::run(int32_t collective, const strata_coll_args& args, Mode mode) const {
  if (mode == Mode::Blocking) return start(collective, args, nullptr);
  strata_request req = nullptr;
  CallResult started = start(collective, args, &req);
  if (!started.ok()) return started;
  if (req == nullptr) {
    return {STRATA_ERR_INTERNAL, "started non-blocking but handed out no request"};
  }
  int32_t done = 0;
  CallResult tested = test_once(req, &done);
  CallResult waited = wait(req);  // even after a failed test(): wait frees the request
  return tested.ok() ? waited : tested;
}

CallResult Session::run(int32_t collective, const strata_coll_args& args, Mode mode,
                        CallBuffers& buffers) const {
  CallResult result = run(collective, args, mode);
  if (result.ok()) buffers.copy_back();
  return result;
}

CallResult Session::gather_bytes(const Bytes& mine, Bytes& all) const {
  const int32_t dtype = carrier_dtype();
  if (dtype < 0 || mine.size() % sdk::dtype_size(dtype) != 0) {
    return {STRATA_ERR_UNSUPPORTED, "no claimed dtype can carry these bytes"};
  }
  Bytes send = mine;
  all.assign(mine.size() * static_cast<size_t>(size()), kUntouched);
  CallBuffers b = buffers();
  const strata_buffer send_view = b.view(send, dtype), recv_view = b.view(all, dtype);
  const CallResult result =
      run(STRATA_COLL_ALLGATHER, coll_args(&send_view, &recv_view), Mode::Blocking, b);
  if (!result.ok()) all.clear();
  return result;
}

strata_coll_args coll_args(const strata_buffer* send, const strata_buffer* recv) {
  strata_coll_args args{};
  args.struct_size = sizeof(args);
  args.send = send;
  args.recv = recv;
  return args;
}

void compare(FirstDifference& diff, const std::string& where, const CallResult& result,
             const Bytes& got, const Bytes& expected, int32_t dtype,
             const std::function<std::string(uint64_t)>& element_note) {
  if (!result.ok()) {
    diff.note(where + ": returned " + result.text());
    return;
  }
  const int64_t index = first_mismatch(got, expected, dtype);
  if (index < 0) return;
  const auto at = static_cast<uint64_t>(index);
  diff.note(where + ": element " + std::to_string(index) +
            (element_note ? element_note(at) : std::string()) + ": expected " +
            value_text(dtype, expected, at) + ", got " + value_text(dtype, got, at));
}

}  // namespace strata::plugin_check::comm
