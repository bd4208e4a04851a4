#include "comm_link.hpp"

namespace strata::zero {

using sdk::fail;

namespace {

std::string offered(const strata_comm_caps& caps) {
  static const char* const kNames[] = {"allreduce", "allgather", "allgatherv",
                                       "reduce_scatter", "broadcast", "barrier"};
  std::string out;
  for (unsigned c = 0; c < 6; ++c) {
    if ((caps.collective_mask & (1u << c)) != 0) {
      out += (out.empty() ? "" : ", ") + std::string(kNames[c]);
    }
  }
  return out.empty() ? "none" : out;
}

// Runs one collective call; a failure names what the plugin was doing (the SDK names only the
// collective).
template <class Call>
void run(const char* purpose, Call&& call) {
  try {
    call();
  } catch (const sdk::Error& e) {
    fail(e.code(), std::string(purpose) + ": " + e.what());
  }
}

}  // namespace

CommLink::CommLink(const sdk::Host& host, int stage) : host_(host), comm_(host.comm_stratum()) {
  caps_ = comm_.query();
  // ABI 1.3: optional collectives may be NULL, whatever the mask says (the runtime clears such
  // bits, but a host that lends the table unfiltered would not).
  if (!comm_.has_reduce_scatter()) {
    caps_.collective_mask &= ~STRATA_COLL_BIT(STRATA_COLL_REDUCE_SCATTER);
  }
  if (!comm_.has_allgatherv()) caps_.collective_mask &= ~STRATA_COLL_BIT(STRATA_COLL_ALLGATHERV);
  const std::string who = "zero stage " + std::to_string(stage);
  if ((caps_.dtype_mask & STRATA_DTYPE_BIT(STRATA_F32)) == 0 ||
      (caps_.collective_mask & STRATA_COLL_BIT(STRATA_COLL_ALLREDUCE)) == 0 ||
      (caps_.device_mask & (STRATA_DEVICE_BIT(STRATA_DEVICE_HOST) |
                            STRATA_DEVICE_BIT(STRATA_DEVICE_CUDA))) == 0) {
    fail(STRATA_ERR_UNSUPPORTED,
         who + " needs f32 allreduce of host or CUDA memory, which the comm stratum lacks");
  }
  const uint32_t partitioning = STRATA_COLL_BIT(STRATA_COLL_REDUCE_SCATTER) |
                                STRATA_COLL_BIT(STRATA_COLL_ALLGATHER);
  if (stage >= 1 && (caps_.collective_mask & partitioning) != partitioning) {
    fail(STRATA_ERR_UNSUPPORTED, who + " needs reduce_scatter and allgather, but the comm stratum "
                                       "offers only: " + offered(caps_));
  }
  if (stage >= 2 && !can_move(STRATA_I64)) {
    fail(STRATA_ERR_UNSUPPORTED, who + " needs i64 allgather (it checks that ranks gather and "
                                       "release the same groups), which the comm stratum lacks");
  }
}

const Memory& CommLink::memory() {
  if (memory_) return *memory_;
  const Memory job(host_);
  const strata_device d = job.device();
  if ((caps_.device_mask & STRATA_DEVICE_BIT(static_cast<unsigned>(d.type))) == 0) {
    fail(STRATA_ERR_UNSUPPORTED,
         std::string("zero: the parameters are in ") +
             (job.on_device() ? "CUDA device memory" : "host memory") +
             ", which the comm stratum cannot move (its device_mask is " +
             std::to_string(caps_.device_mask) + "); use a comm plugin for " +
             (job.on_device() ? "CUDA buffers (allreduce-nccl)" : "host buffers"));
  }
  memory_ = job;
  return *memory_;
}

template <class Call>
void CommLink::on_host_data(void* in, void* out, uint64_t in_count, uint64_t out_count,
                            int32_t dtype, Call&& call) {
  const bool host_ok = (caps_.device_mask & STRATA_DEVICE_BIT(STRATA_DEVICE_HOST)) != 0;
  const Memory& job = memory();
  if (host_ok || !job.on_device()) {
    call(sdk::host_buffer(in, in_count, dtype), sdk::host_buffer(out, out_count, dtype));
    return;
  }
  const size_t esize = sdk::dtype_size(dtype);
  Buffer<unsigned char> d_in(host_, in_count * esize, STRATA_MEM_COMM_BUFFERS);
  Buffer<unsigned char> d_out(host_, out_count * esize, STRATA_MEM_COMM_BUFFERS);
  job.from_host(d_in.data(), in, in_count * esize);
  call(job.buffer(d_in.data(), in_count, dtype), job.buffer(d_out.data(), out_count, dtype));
  job.to_host(out, d_out.data(), out_count * esize);
}

strata_request CommLink::start_allreduce(const float* send, float* recv, uint64_t count,
                                         strata_reduce_op op) {
  return start_allreduce(send, recv, count, STRATA_F32, op);
}

strata_request CommLink::start_reduce_scatter(const float* send, float* recv, uint64_t count,
                                              strata_reduce_op op) {
  return start_reduce_scatter(send, recv, count, STRATA_F32, op);
}

strata_request CommLink::start_allreduce(const void* send, void* recv, uint64_t count,
                                         int32_t dtype, strata_reduce_op op) {
  // The ABI's buffer views are non-const; the comm plugin only reads `send`.
  const strata_buffer in = memory().buffer(const_cast<void*>(send), count, dtype);
  const strata_buffer out = memory().buffer(recv, count, dtype);
  strata_request req = nullptr;
  run("gradient allreduce",
      [&] { comm_.allreduce(in, out, op, caps_.nonblocking ? &req : nullptr); });
  return req;
}

strata_request CommLink::start_reduce_scatter(const void* send, void* recv, uint64_t count,
                                              int32_t dtype, strata_reduce_op op) {
  const auto n = static_cast<uint64_t>(caps_.size);
  const strata_buffer in = memory().buffer(const_cast<void*>(send), count * n, dtype);
  const strata_buffer out = memory().buffer(recv, count, dtype);
  strata_request req = nullptr;
  run("gradient reduce_scatter",
      [&] { comm_.reduce_scatter(in, out, op, caps_.nonblocking ? &req : nullptr); });
  return req;
}

void CommLink::require_reduce_dtype(int32_t dtype, const std::string& key) const {
  if (dtype == STRATA_F32 || can_move(dtype)) return;
  fail(STRATA_ERR_UNSUPPORTED, key + " is " + sdk::dtype_name(dtype) +
                                   ", which the comm stratum cannot reduce (its dtype_mask is " +
                                   std::to_string(caps_.dtype_mask) + ")");
}

strata_request CommLink::start_allgather(const void* send, void* recv, uint64_t count,
                                         int32_t dtype) {
  const auto n = static_cast<uint64_t>(caps_.size);
  const strata_buffer in = memory().buffer(const_cast<void*>(send), count, dtype);
  const strata_buffer out = memory().buffer(recv, count * n, dtype);
  strata_request req = nullptr;
  run("parameter allgather", [&] { comm_.allgather(in, out, caps_.nonblocking ? &req : nullptr); });
  return req;
}

void CommLink::wait(strata_request req) {
  if (req == nullptr) return;
  run("collective wait", [&] { comm_.wait(req); });
}

void CommLink::poke(strata_request req) {
  if (req == nullptr || !comm_.has_test()) return;
  run("collective test", [&] { comm_.test(req); });
}

std::vector<int64_t> CommLink::allgather_i64(const std::vector<int64_t>& values) {
  std::vector<int64_t> mine(values);
  std::vector<int64_t> all(values.size() * static_cast<size_t>(caps_.size));
  on_host_data(mine.data(), all.data(), mine.size(), all.size(), STRATA_I64,
               [&](const strata_buffer& in, const strata_buffer& out) {
                 run("gather/release sequence check", [&] { comm_.allgather(in, out); });
               });
  return all;
}

void CommLink::expect_same_on_all_ranks(const std::vector<int64_t>& values,
                                        const std::vector<std::string>& names) {
  if ((caps_.dtype_mask & STRATA_DTYPE_BIT(STRATA_F64)) == 0) return;  // cannot check; not fatal
  // One MAX reduction of (v, -v) yields both the maximum and the minimum over ranks.
  const size_t n = values.size();
  std::vector<double> both(2 * n);
  for (size_t i = 0; i < n; ++i) {
    // f64 is exact for the counts compared here (< 2^53) and every comm plugin reduces it.
    both[i] = static_cast<double>(values[i]);
    both[n + i] = -static_cast<double>(values[i]);
  }
  on_host_data(both.data(), both.data(), both.size(), both.size(), STRATA_F64,
               [&](const strata_buffer& in, const strata_buffer& out) {
                 run("parameter agreement check", [&] { comm_.allreduce(in, out, STRATA_MAX); });
               });
  for (size_t i = 0; i < n; ++i) {
    const auto hi = static_cast<int64_t>(both[i]);
    const auto lo = static_cast<int64_t>(-both[n + i]);
    if (hi != lo) {
      fail(STRATA_ERR_MISMATCH, "ranks registered different parameters: " + names[i] +
                                    " is " + std::to_string(values[i]) + " on rank " +
                                    std::to_string(caps_.rank) + " but ranges from " +
                                    std::to_string(lo) + " to " + std::to_string(hi) +
                                    " across ranks");
    }
  }
}

}  // namespace strata::zero
