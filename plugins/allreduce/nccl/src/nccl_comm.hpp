// This process's NCCL communicator in non-blocking mode (ncclConfig_t blocking = 0): every call
// returns at once and is followed by polling ncclCommGetAsyncError, so no call can hang past the
// configured timeout. On an NCCL error, or when a wait runs past the timeout, the communicator is
// aborted (ncclCommAbort) and the call fails with a message naming the collective, the rank and
// NCCL's error; every later call fails at once with the same reason.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <memory>
#include <string>

namespace strata::allreduce_nccl {

class NcclComm {
 public:
  // ncclCommInitRankConfig on `device`, waited for at most `timeout`. `who` prefixes messages
  // ("rank R (local rank L)"). Throws sdk::Error (STRATA_ERR_COMM) after aborting on failure.
  NcclComm(const ncclUniqueId& id, int rank, int size, int device,
           std::chrono::milliseconds timeout, std::string who);
  // ncclCommFinalize (waited for at most the timeout) and ncclCommDestroy; ncclCommAbort instead
  // when the communicator failed or finalising does not finish.
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }
  std::chrono::milliseconds timeout() const { return timeout_; }
  const std::string& who() const { return who_; }

  // ncclCommSplit over this communicator (collective: every rank of it calls split, in the same
  // order as its collectives): the communicator of the ranks that passed the same color, ranked by
  // key, on the same device, non-blocking and with the same timeout; nullptr for color < 0
  // (NCCL_SPLIT_NOCOLOR). Its rank and size come from ncclCommUserRank and ncclCommCount. An NCCL
  // error, or a split that does not finish within the timeout, aborts this communicator (as a
  // failed collective does; the new one too, if NCCL made it) and throws sdk::Error
  // (STRATA_ERR_COMM); a new communicator that fails its own set-up is aborted alone.
  std::unique_ptr<NcclComm> split(int color, int key);

  // Fails (STRATA_ERR_COMM) when an earlier call aborted the communicator.
  void check_usable(const char* call) const;
  // After an NCCL call that returned `issued`: waits while NCCL reports ncclInProgress (the call
  // is being enqueued), then returns; aborts and throws on an error or past the timeout.
  void settle(ncclResult_t issued, const char* call);
  // Waits until `done` (recorded after `call`'s work) has completed, polling the event and
  // ncclCommGetAsyncError; aborts and throws on an error or when `started` is more than the timeout
  // ago.
  void wait_for(cudaEvent_t done, std::chrono::steady_clock::time_point started, const char* call);
  // One poll of the same: true when `done` has completed.
  bool poll(cudaEvent_t done, std::chrono::steady_clock::time_point started, const char* call);

 private:
  // Takes over `comm`, a communicator that ncclCommSplit has finished setting up.
  NcclComm(ncclComm_t comm, int rank, int size, int device, std::chrono::milliseconds timeout,
           std::string who);

  // Aborts the communicator and throws sdk::Error(STRATA_ERR_COMM) "allreduce-nccl: <call>: <who>
  // on cuda:D: <reason>; the NCCL communicator was aborted".
  [[noreturn]] void abort_with(const char* call, const std::string& reason);
  // ncclCommGetAsyncError: throws (after aborting) on an error; true while still in progress.
  bool in_progress(const char* call);
  void check_deadline(std::chrono::steady_clock::time_point started, const char* call,
                      const char* waiting_for);

  ncclComm_t comm_ = nullptr;
  int rank_;
  int size_;
  int device_;
  std::chrono::milliseconds timeout_;
  std::string who_;
  std::string aborted_;  // the reason, once aborted
  // Where a non-blocking ncclCommSplit stores the new communicator: NCCL's set-up thread writes it
  // when it finishes, so it lives here, with the parent, not on split()'s stack.
  ncclComm_t splitting_ = nullptr;
};

}  // namespace strata::allreduce_nccl
