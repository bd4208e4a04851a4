#include "nccl_comm.hpp"

#include "cuda_errors.hpp"

#include <strata/plugin.hpp>

#include <cstdio>
#include <thread>

namespace strata::allreduce_nccl {
namespace {

using Clock = std::chrono::steady_clock;

// Between polls: spin briefly (a small collective finishes within microseconds), then sleep so
// that a rank waiting for a slow peer does not burn a core.
void pause(int& polls) {
  if (++polls < 200) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(polls < 2000 ? 50 : 1000));
  }
}

std::string seconds(std::chrono::milliseconds timeout) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", static_cast<double>(timeout.count()) / 1000.0);
  return text;
}

}  // namespace

NcclComm::NcclComm(const ncclUniqueId& id, int rank, int size, int device,
                   std::chrono::milliseconds timeout, std::string who)
    : rank_(rank), size_(size), device_(device), timeout_(timeout), who_(std::move(who)) {
  check_cuda(cudaSetDevice(device),
             "allreduce-nccl: " + who_ + ": cudaSetDevice(" + std::to_string(device) + ")");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t started = ncclCommInitRankConfig(&comm_, size, id, rank, &config);
  if (started != ncclSuccess && started != ncclInProgress) {
    const std::string text = nccl_error_text(started, comm_);
    if (comm_ != nullptr) ncclCommAbort(comm_);
    comm_ = nullptr;
    sdk::fail(STRATA_ERR_COMM, "allreduce-nccl: init: " + who_ + " on cuda:" +
                                   std::to_string(device) + ": ncclCommInitRankConfig: " + text);
  }
  const auto begin = Clock::now();
  int polls = 0;
  while (in_progress("init")) {
    check_deadline(begin, "init",
                   "the NCCL communicator's set-up (a peer may not have started, or failed)");
    pause(polls);
  }
}

NcclComm::NcclComm(ncclComm_t comm, int rank, int size, int device,
                   std::chrono::milliseconds timeout, std::string who)
    : comm_(comm),
      rank_(rank),
      size_(size),
      device_(device),
      timeout_(timeout),
      who_(std::move(who)) {}

std::unique_ptr<NcclComm> NcclComm::split(int color, int key) {
  const char* call = "split";
  check_usable(call);
  check_cuda(cudaSetDevice(device_), "allreduce-nccl: split: " + who_ + ": cudaSetDevice(" +
                                         std::to_string(device_) + ")");
  const bool joins = color >= 0;
  // Non-blocking like this one (what a NULL config would inherit, said explicitly), so that the
  // new communicator's calls are polled against the timeout as this one's are.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  splitting_ = nullptr;
  const ncclResult_t issued =
      ncclCommSplit(comm_, joins ? color : NCCL_SPLIT_NOCOLOR, key, &splitting_, &config);
  // The split runs in NCCL's set-up thread as a job of this communicator (its async state says
  // ncclInProgress until the job is done), which stores the new communicator into splitting_
  // when it finishes. Wait for both.
  const auto begin = Clock::now();
  int polls = 0;
  ncclComm_t child = nullptr;
  try {
    if (issued != ncclSuccess && issued != ncclInProgress) {
      abort_with(call, "ncclCommSplit: " + nccl_error_text(issued, comm_));
    }
    for (;;) {
      const bool busy = in_progress(call);
      child = __atomic_load_n(&splitting_, __ATOMIC_ACQUIRE);
      if (!busy && (child != nullptr || !joins)) break;
      check_deadline(begin, call,
                     "the split (every rank of the communicator must call it; a peer may have "
                     "failed)");
      pause(polls);
    }
  } catch (...) {
    // This communicator was aborted (abort_with), which stops the split; abort what NCCL had
    // made of the new one, if anything.
    const ncclComm_t made = __atomic_exchange_n(&splitting_, nullptr, __ATOMIC_ACQ_REL);
    if (made != nullptr) ncclCommAbort(made);
    throw;
  }
  splitting_ = nullptr;
  if (!joins) return nullptr;

  const std::string where = "allreduce-nccl: split: " + who_ + " on cuda:" +
                            std::to_string(device_) + ": the new communicator (color " +
                            std::to_string(color) + "): ";
  // The new communicator alone failed: abort it and leave this one as it is (it finished the
  // split); the other members' sets-up fail or time out the same way.
  const auto fail_child = [&](const std::string& reason) {
    ncclCommAbort(child);
    sdk::fail(STRATA_ERR_COMM, where + reason + "; it was aborted");
  };
  ncclResult_t state = ncclInProgress;
  for (;;) {
    const ncclResult_t asked = ncclCommGetAsyncError(child, &state);
    if (asked != ncclSuccess) {
      fail_child("ncclCommGetAsyncError: " + nccl_error_text(asked, child));
    }
    if (state != ncclInProgress) break;
    if (Clock::now() - begin > timeout_) {
      fail_child("still setting up after " + seconds(timeout_) + " (timeout_seconds)");
    }
    pause(polls);
  }
  if (state != ncclSuccess) fail_child("NCCL reported " + nccl_error_text(state, child));
  int rank = -1;
  int size = 0;
  ncclResult_t asked = ncclCommUserRank(child, &rank);
  if (asked == ncclSuccess) asked = ncclCommCount(child, &size);
  if (asked != ncclSuccess) {
    fail_child("ncclCommUserRank/ncclCommCount: " + nccl_error_text(asked, child));
  }
  std::string who = who_ + ", split color " + std::to_string(color) + " rank " +
                    std::to_string(rank) + " of " + std::to_string(size);
  try {
    return std::unique_ptr<NcclComm>(
        new NcclComm(child, rank, size, device_, timeout_, std::move(who)));
  } catch (...) {
    ncclCommAbort(child);
    throw;
  }
}

NcclComm::~NcclComm() {
  if (comm_ == nullptr) return;
  cudaSetDevice(device_);
  if (aborted_.empty() && ncclCommFinalize(comm_) != ncclSuccess) {
    // Non-blocking: finalising flushes outstanding work; wait for it as for a collective.
    const auto begin = Clock::now();
    int polls = 0;
    ncclResult_t state = ncclInProgress;
    while (ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state == ncclInProgress &&
           Clock::now() - begin < timeout_) {
      pause(polls);
    }
    if (state != ncclSuccess) {
      ncclCommAbort(comm_);
      return;
    }
  }
  if (aborted_.empty()) ncclCommDestroy(comm_);
}

void NcclComm::check_usable(const char* call) const {
  if (!aborted_.empty()) {
    sdk::fail(STRATA_ERR_COMM, std::string("allreduce-nccl: ") + call + ": " + who_ +
                                   ": the NCCL communicator was aborted earlier (" + aborted_ +
                                   ")");
  }
}

void NcclComm::abort_with(const char* call, const std::string& reason) {
  if (aborted_.empty()) {
    aborted_ = std::string(call) + ": " + reason;
    ncclCommAbort(comm_);
  }
  sdk::fail(STRATA_ERR_COMM, std::string("allreduce-nccl: ") + call + ": " + who_ +
                                 " on cuda:" + std::to_string(device_) + ": " + reason +
                                 "; the NCCL communicator was aborted");
}

bool NcclComm::in_progress(const char* call) {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t asked = ncclCommGetAsyncError(comm_, &state);
  if (asked != ncclSuccess)
    abort_with(call, "ncclCommGetAsyncError: " + nccl_error_text(asked, comm_));
  if (state == ncclInProgress) return true;
  if (state != ncclSuccess) abort_with(call, "NCCL reported " + nccl_error_text(state, comm_));
  return false;
}

void NcclComm::check_deadline(Clock::time_point started, const char* call,
                              const char* waiting_for) {
  if (Clock::now() - started <= timeout_) return;
  abort_with(call, std::string("still waiting for ") + waiting_for + " after " + seconds(timeout_) +
                       " (timeout_seconds)");
}

void NcclComm::settle(ncclResult_t issued, const char* call) {
  if (issued != ncclSuccess && issued != ncclInProgress) {
    abort_with(call, "NCCL refused the call: " + nccl_error_text(issued, comm_));
  }
  const auto begin = Clock::now();
  int polls = 0;
  while (in_progress(call)) {
    check_deadline(begin, call, "NCCL to enqueue the collective");
    pause(polls);
  }
}

bool NcclComm::poll(cudaEvent_t done, Clock::time_point started, const char* call) {
  const cudaError_t state = cudaEventQuery(done);
  if (state == cudaSuccess) return true;
  if (state != cudaErrorNotReady) {
    abort_with(call, std::string("CUDA reported ") + cudaGetErrorName(state) + ": " +
                         cudaGetErrorString(state));
  }
  in_progress(call);  // throws on an NCCL error (a peer gone, a network failure)
  check_deadline(started, call, "the collective to complete (a peer may have failed or stalled)");
  return false;
}

void NcclComm::wait_for(cudaEvent_t done, Clock::time_point started, const char* call) {
  int polls = 0;
  while (!poll(done, started, call)) pause(polls);
}

}  // namespace strata::allreduce_nccl
