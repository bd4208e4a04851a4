// One save's writing, on a thread of its own, while training goes on: this rank's shard file, and
// on rank 0 the metadata, into the save's partial folder. The state was copied into `data` during
// the save's pause; the thread only reads it, and the caller keeps it alive until join().
#pragma once

#include "checkpoint/format.hpp"

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace strata::rt {

struct WriteJob {
  std::string partial_dir;
  int rank = 0;
  std::vector<ckpt::Range> ranges;
  size_t slots = 0;
  const float* data = nullptr;  // range-major, slot-minor, as the shard file holds it
  std::string metadata_text;    // rank 0: metadata.json's text; others: empty
};

class CheckpointWriter {
 public:
  explicit CheckpointWriter(WriteJob job);  // starts the thread
  ~CheckpointWriter();                      // joins it
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Whether the thread has finished (successfully or not); cheap, any thread.
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  // Waits for the thread. Afterwards error() is "" on success, else the failure's message.
  void join();
  const std::string& error() const { return error_; }
  // Leaves the thread running, never joined (a failed rank ending: a write stuck on the drive must
  // not keep it from reporting). The caller must then keep `data` alive for the process's life.
  void abandon();

 private:
  void run();

  WriteJob job_;
  std::string error_;
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

}  // namespace strata::rt
