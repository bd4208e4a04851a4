// caps, barrier, non-blocking ordering and the error paths.
#include "comm_checks.hpp"

#include <strata/comm/reduce_ops.hpp>
#include <strata/plugin.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <optional>
#include <thread>

namespace strata::plugin_check::comm {
namespace {

Bytes int64_bytes(int64_t value) {
  Bytes bytes(sizeof(value));
  std::memcpy(bytes.data(), &value, sizeof(value));
  return bytes;
}

int64_t int64_at(const Bytes& bytes, int r) {
  int64_t value;
  std::memcpy(&value, bytes.data() + static_cast<size_t>(r) * sizeof(value), sizeof(value));
  return value;
}

// Wall-clock microseconds: one clock for every process of a host, so that entry and exit times
// of different ranks compare.
int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Verdict check_caps(const Session& s) {
  FirstDifference diff;
  const strata_comm_caps& c = s.caps;
  const std::string sizes = "rank " + std::to_string(c.rank) + ", size " + std::to_string(c.size) +
                            ", local_rank " + std::to_string(c.local_rank) + ", local_size " +
                            std::to_string(c.local_size);
  if (c.size < 1 || c.rank < 0 || c.rank >= c.size) diff.note(sizes + ": rank not in [0, size)");
  if (c.local_size < 1 || c.local_size > c.size || c.local_rank < 0 ||
      c.local_rank >= c.local_size) {
    diff.note(sizes + ": expected 0 <= local_rank < local_size <= size");
  }
  if ((c.dtype_mask & ((1u << STRATA_DTYPE_COUNT) - 1)) == 0) {
    diff.note("dtype_mask claims no dtype");
  }
  for (int32_t required :
       {STRATA_COLL_ALLREDUCE, STRATA_COLL_ALLGATHER, STRATA_COLL_BROADCAST, STRATA_COLL_BARRIER}) {
    if (!s.claims(required)) {
      diff.note(std::string(sdk::comm::collective_name(required)) +
                " is Required but not claimed (collective_mask bit clear or function NULL)");
    }
  }
  // ABI 1.10's optional members: a caps bit says the function is there (NULL, or a table whose
  // header.struct_size ends before it, means not offered; the runtime clears such a bit, but the
  // caps then claim what the plugin cannot do).
  const auto missing = [&](size_t offset, bool present) -> std::string {
    if (s.fns.ops->header.struct_size < offset + sizeof(void*)) {
      return "past the table's header.struct_size " +
             std::to_string(s.fns.ops->header.struct_size) + ", a table older than ABI 1.10";
    }
    return present ? "" : "NULL";
  };
  if ((c.collective_mask & STRATA_COLL_BIT(STRATA_COLL_ALLTOALLV)) != 0 &&
      s.fns.collective(STRATA_COLL_ALLTOALLV) == nullptr) {
    diff.note("collective_mask claims alltoallv (STRATA_COLL_ALLTOALLV) but the ops table has no "
              "alltoallv (" + missing(offsetof(strata_comm_ops, alltoallv), false) + ")");
  }
  if ((c.features & STRATA_COMM_FEATURE_SPLIT) != 0 && s.fns.split() == nullptr) {
    diff.note("features claims STRATA_COMM_FEATURE_SPLIT but the ops table has no split (" +
              missing(offsetof(strata_comm_ops, split), false) + ")");
  }
  if (c.nonblocking != 0 && c.nonblocking != 1) {
    diff.note("nonblocking is " + std::to_string(c.nonblocking) + ", expected 0 or 1");
  }
  if (c.nonblocking != 0 && s.fns.wait() == nullptr) diff.note("nonblocking is 1 but wait is NULL");
  // Ranks agree on the world: rank ids gathered give 0..size-1, each once, in order.
  if (c.size >= 1 && s.claims(STRATA_COLL_ALLGATHER) && s.carrier_dtype() >= 0 &&
      s.memory_claimed()) {
    Bytes all;
    const CallResult result = s.gather_bytes(int64_bytes(c.rank), all);
    if (!result.ok()) diff.note("allgather of the rank ids returned " + result.text());
    for (int r = 0; result.ok() && r < c.size; ++r) {
      if (int64_at(all, r) != r) {
        diff.note("allgather of the rank ids: block " + std::to_string(r) + " holds rank " +
                  std::to_string(int64_at(all, r)));
      }
    }
  }
  return diff.verdict();
}

// Every rank enters the barrier after a rank-dependent sleep (the late rank, a different one
// each round, 15 ms); nobody may leave before the last entered.
Verdict check_barrier(const Session& s) {
  if (!s.claims(STRATA_COLL_ALLGATHER) || s.carrier_dtype() < 0) {
    return Verdict::skip("needs allgather in some claimed dtype to compare the ranks' times");
  }
  FirstDifference diff;
  const strata_coll_args args = coll_args(nullptr, nullptr);
  for (Mode mode : s.modes()) {
    for (int late = 0; late < s.size(); ++late) {
      const std::string round =
          std::string(mode_name(mode)) + ", rank " + std::to_string(late) + " late";
      CallResult result = s.run(STRATA_COLL_BARRIER, args, Mode::Blocking);  // line up
      if (!result.ok()) diff.note(round + ": the barrier before returned " + result.text());
      std::this_thread::sleep_for(std::chrono::milliseconds(s.rank() == late ? 15 : s.rank()));
      const int64_t entered = now_us();
      result = s.run(STRATA_COLL_BARRIER, args, mode);
      const int64_t left = now_us();
      if (!result.ok()) diff.note(round + ": returned " + result.text());
      Bytes entries;
      const CallResult gathered = s.gather_bytes(int64_bytes(entered), entries);
      if (!gathered.ok()) {
        diff.note(round + ": allgather of the entry times returned " + gathered.text());
        continue;
      }
      for (int r = 0; r < s.size(); ++r) {
        if (int64_at(entries, r) > left) {
          diff.note(round + ": this rank left the barrier " +
                    std::to_string(int64_at(entries, r) - left) + " us before rank " +
                    std::to_string(r) + " entered it");
        }
      }
    }
  }
  return diff.verdict();
}

namespace {

// One collective of the ordering check, with its own buffers and expected result.
struct InFlight {
  std::string what;
  int32_t collective;
  int32_t dtype;
  Bytes send, recv, expected;
  std::optional<CallBuffers> buffers;  // in the session's memory, made when the job starts
  strata_buffer send_view{}, recv_view{};
  strata_coll_args args{};
  strata_request req = nullptr;
  bool started = false;
};

void add_reduction(std::vector<InFlight>& jobs, const Session& s, int32_t collective, int32_t dtype,
                   int32_t op, uint64_t count) {
  InFlight& job = jobs.emplace_back();
  const bool scatter = collective == STRATA_COLL_REDUCE_SCATTER;
  const uint64_t world = static_cast<uint64_t>(s.size());
  job.what = std::string(sdk::comm::collective_name(collective)) + " " + op_label(op) + " of " +
             std::to_string(count);
  job.collective = collective;
  job.dtype = dtype;
  job.send = rank_input(dtype, s.rank(), scatter ? count * world : count);
  job.recv.assign(count * sdk::dtype_size(dtype), kUntouched);
  job.expected = expected_reduction(dtype, op, s.size(), count,
                                    scatter ? count * static_cast<uint64_t>(s.rank()) : 0);
  job.args.op = op;
}

}  // namespace

// Several collectives in flight at once on different buffers (three allreduces, an allgather,
// then reduce_scatter and broadcast), waited in another order than they were started: the last
// first (polled with test() where the plugin has it), then 1, 0 and the rest backwards.
Verdict check_nonblocking_ordering(const Session& s) {
  if (s.modes().size() < 2) return Verdict::skip("caps.nonblocking is 0");
  const int32_t dtype = s.primary_dtype();
  if (dtype < 0) return Verdict::skip("the caps claim no dtype");
  std::vector<InFlight> jobs;
  jobs.reserve(6);  // the args point into the jobs: no reallocation
  add_reduction(jobs, s, STRATA_COLL_ALLREDUCE, dtype, STRATA_SUM, 3001);
  add_reduction(jobs, s, STRATA_COLL_ALLREDUCE, dtype, STRATA_MAX, 7);
  add_reduction(jobs, s, STRATA_COLL_ALLREDUCE, dtype, STRATA_AVG, 65537);
  {
    InFlight& job = jobs.emplace_back();
    job.what = "allgather of 1001";
    job.collective = STRATA_COLL_ALLGATHER;
    job.dtype = dtype;
    job.send = rank_input(dtype, s.rank(), 1001);
    for (int r = 0; r < s.size(); ++r) {
      const Bytes block = rank_input(dtype, r, 1001);
      job.expected.insert(job.expected.end(), block.begin(), block.end());
    }
    job.recv.assign(job.expected.size(), kUntouched);
  }
  if (s.claims(STRATA_COLL_REDUCE_SCATTER)) {
    add_reduction(jobs, s, STRATA_COLL_REDUCE_SCATTER, dtype, STRATA_MIN, 129);
  }
  if (s.claims(STRATA_COLL_BROADCAST)) {
    InFlight& job = jobs.emplace_back();
    job.what = "broadcast of 501 from rank " + std::to_string(s.size() - 1);
    job.collective = STRATA_COLL_BROADCAST;
    job.dtype = dtype;
    job.recv = rank_input(dtype, s.rank(), 501);
    job.expected = rank_input(dtype, s.size() - 1, 501);
    job.args.root = s.size() - 1;
  }
  FirstDifference diff;
  for (size_t i = 0; i < jobs.size(); ++i) {
    InFlight& job = jobs[i];
    job.buffers.emplace(s.memory);
    job.send_view = job.buffers->view(job.send, dtype);
    job.recv_view = job.buffers->view(job.recv, dtype);
    job.args.struct_size = sizeof(job.args);
    job.args.send = job.collective == STRATA_COLL_BROADCAST ? nullptr : &job.send_view;
    job.args.recv = &job.recv_view;
    const CallResult started = s.start(job.collective, job.args, &job.req);
    job.started = started.ok() && job.req != nullptr;
    const std::string what = job.what + " (started #" + std::to_string(i) + ")";
    if (!started.ok()) diff.note(what + ": returned " + started.text());
    if (started.ok() && job.req == nullptr) diff.note(what + ": returned no request");
  }
  std::vector<size_t> order = {jobs.size() - 1, 1, 0};
  for (size_t i = jobs.size() - 1; i-- > 2;) order.push_back(i);
  for (size_t n = 0; n < order.size(); ++n) {
    InFlight& job = jobs[order[n]];
    if (!job.started) continue;
    const std::string what = job.what + " (started #" + std::to_string(order[n]) + ", waited #" +
                             std::to_string(n) + ")";
    const CallResult polled = n == 0 ? s.poll_until_done(job.req) : CallResult{};
    const CallResult waited = s.wait(job.req);
    if (waited.ok()) job.buffers->copy_back();
    compare(diff, what, polled.ok() ? waited : polled, job.recv, job.expected, dtype);
  }
  return diff.verdict();
}

}  // namespace strata::plugin_check::comm
