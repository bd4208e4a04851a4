// The error paths: bad arguments (local: every rank makes the same bad calls, none communicates)
// and ranks that disagree on a count (an error on every rank, not a hang).
#include "comm_checks.hpp"

#include <strata/plugin.hpp>

#include <functional>
#include <memory>
#include <vector>

namespace strata::plugin_check::comm {
namespace {

// One bad call: `edit` spoils a valid allreduce/allgather/broadcast of 64 elements.
struct BadCall {
  const char* what;
  int32_t collective;
  strata_status required;  // the status the header or the SDK's checks make exact; OK: any error
  std::function<void(strata_coll_args&, strata_buffer& send, strata_buffer& recv)> edit;
};

std::vector<BadCall> bad_calls(int size) {
  // The receive displacements with the last block starting at recv.count (64).
  auto past_end = std::make_shared<std::vector<uint64_t>>(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) (*past_end)[r] = static_cast<uint64_t>(r) * (64 / static_cast<uint64_t>(size));
  past_end->back() = 64;
  const auto root = [](int32_t r) {
    return [r](strata_coll_args& a, strata_buffer&, strata_buffer&) { a.root = r; };
  };
  const auto op = [](int32_t o) {
    return [o](strata_coll_args& a, strata_buffer&, strata_buffer&) { a.op = o; };
  };
  return {
      {"allreduce with recv.count 63, send.count 64", STRATA_COLL_ALLREDUCE,
       STRATA_ERR_INVALID_ARGUMENT,
       [](strata_coll_args&, strata_buffer&, strata_buffer& r) { r.count = 63; }},
      {"allreduce with a NULL send buffer", STRATA_COLL_ALLREDUCE, STRATA_OK,
       [](strata_coll_args& a, strata_buffer&, strata_buffer&) { a.send = nullptr; }},
      {"allreduce with send.data NULL and send.count 64", STRATA_COLL_ALLREDUCE, STRATA_OK,
       [](strata_coll_args&, strata_buffer& s, strata_buffer&) { s.data = nullptr; }},
      {"allreduce with dtype 42", STRATA_COLL_ALLREDUCE, STRATA_OK,
       [](strata_coll_args&, strata_buffer& s, strata_buffer& r) { s.dtype = r.dtype = 42; }},
      {"allreduce with dtype -1", STRATA_COLL_ALLREDUCE, STRATA_OK,
       [](strata_coll_args&, strata_buffer& s, strata_buffer& r) { s.dtype = r.dtype = -1; }},
      {"allreduce with op 9", STRATA_COLL_ALLREDUCE, STRATA_OK, op(9)},
      {"allreduce with op -1", STRATA_COLL_ALLREDUCE, STRATA_OK, op(-1)},
      {"allgather with recv.count 64 * size + 1", STRATA_COLL_ALLGATHER, STRATA_OK,
       [size](strata_coll_args&, strata_buffer&, strata_buffer& r) {
         r.count = 64 * static_cast<uint64_t>(size) + 1;
       }},
      {"broadcast from root size", STRATA_COLL_BROADCAST, STRATA_OK, root(size)},
      {"broadcast from root -1", STRATA_COLL_BROADCAST, STRATA_OK, root(-1)},
      // ABI 1.10, where claimed: every rank sends 64 / size elements to each (alltoallv_arrays).
      {"alltoallv with send_counts NULL", STRATA_COLL_ALLTOALLV, STRATA_OK,
       [](strata_coll_args& a, strata_buffer&, strata_buffer&) { a.send_counts = nullptr; }},
      {"alltoallv with displs (the receive displacements) NULL", STRATA_COLL_ALLTOALLV, STRATA_OK,
       [](strata_coll_args& a, strata_buffer&, strata_buffer&) { a.displs = nullptr; }},
      {"alltoallv with the last rank's receive block past recv.count", STRATA_COLL_ALLTOALLV,
       STRATA_OK,
       [past_end](strata_coll_args& a, strata_buffer&, strata_buffer&) {
         a.displs = past_end->data();
       }},
      {"alltoallv in place (send.data == recv.data)", STRATA_COLL_ALLTOALLV, STRATA_OK,
       [](strata_coll_args&, strata_buffer& s, strata_buffer& r) { s = r; }},
  };
}

// alltoallv's arrays for the bad calls: 64 / size elements to and from each rank, in rank order.
struct AlltoallvArrays {
  std::vector<uint64_t> counts, displs;
  explicit AlltoallvArrays(int size)
      : counts(static_cast<size_t>(size), 64 / static_cast<uint64_t>(size)),
        displs(static_cast<size_t>(size)) {
    for (size_t r = 0; r < displs.size(); ++r) displs[r] = r * counts[r];
  }
};

}  // namespace

// Each bad call (alltoallv's where the caps claim it), blocking and (when claimed) non-blocking, must return an error with a message
// (recv.count wrong for allreduce: STRATA_ERR_INVALID_ARGUMENT exactly), and never crash. A call
// that is accepted anyway is waited, so that no request is left behind.
Verdict check_bad_arguments(const Session& s) {
  const int32_t dtype = s.primary_dtype();
  if (dtype < 0) return Verdict::skip("the caps claim no dtype");
  const size_t element = sdk::dtype_size(dtype);
  FirstDifference diff;
  const AlltoallvArrays arrays(s.size());
  for (const BadCall& call : bad_calls(s.size())) {
    if (call.collective == STRATA_COLL_ALLTOALLV && !s.claims(STRATA_COLL_ALLTOALLV)) continue;
    for (Mode mode : s.modes()) {
      Bytes send_bytes(64 * element), recv_bytes(64 * element * static_cast<size_t>(s.size()));
      CallBuffers b = s.buffers();  // never copied back: every call here must be refused
      strata_buffer send = b.view(send_bytes, dtype), recv = b.view(recv_bytes, dtype);
      if (call.collective != STRATA_COLL_ALLGATHER) recv.count = 64;
      strata_coll_args args = coll_args(&send, &recv);
      if (call.collective == STRATA_COLL_BROADCAST) args.send = nullptr;
      if (call.collective == STRATA_COLL_ALLTOALLV) {
        args.send_counts = args.recv_counts = arrays.counts.data();
        args.send_displs = args.displs = arrays.displs.data();
      }
      call.edit(args, send, recv);
      strata_request req = nullptr;
      const CallResult result =
          s.start(call.collective, args, mode == Mode::Nonblocking ? &req : nullptr);
      const std::string what = std::string(call.what) + ", " + mode_name(mode);
      if (result.ok()) {
        diff.note(what + ": returned STRATA_OK");
        if (req != nullptr) s.wait(req);
      } else if (call.required != STRATA_OK && result.status != call.required) {
        diff.note(what + ": returned " + result.text() + ", expected " +
                  status_name(call.required));
      } else if (result.message.empty()) {
        diff.note(what + ": returned " + status_name(result.status) + " without a message");
      }
    }
  }
  return diff.verdict();
}

// Rank 0 calls allreduce with 10 elements, the others with 11: every rank must get an error
// (the in-tree plugins: STRATA_ERR_MISMATCH) with a message, not STRATA_OK and not a hang (the
// Recorder's watchdog). Then destroys the instance, under the same watchdog: the transport may be
// unusable after (and a plugin may not be created again once its last instance is gone: MPI).
Verdict check_mismatched_counts(const Session& s, std::unique_ptr<CommInstance>& instance) {
  const int32_t dtype = s.primary_dtype() < 0 ? STRATA_F32 : s.primary_dtype();
  const uint64_t count = s.rank() == 0 ? 10 : 11;
  Bytes data = rank_input(dtype, s.rank(), count);
  CallBuffers b = s.buffers();
  const strata_buffer buffer = b.view(data, dtype);
  strata_coll_args args = coll_args(&buffer, &buffer);
  args.op = STRATA_SUM;
  const CallResult result = s.run(STRATA_COLL_ALLREDUCE, args, Mode::Blocking);
  instance.reset();
  const std::string what = "rank 0 called allreduce of 10 " + dtype_label(dtype) +
                           ", the others of 11; this rank (" + std::to_string(s.rank()) + ")";
  if (result.ok()) return Verdict::fail(what + " got STRATA_OK");
  if (result.message.empty()) {
    return Verdict::fail(what + " got " + status_name(result.status) + " without a message");
  }
  return Verdict::pass(result.text());
}

}  // namespace strata::plugin_check::comm
