#include "checkpoint/checkpoint_writer.hpp"

#include "error.hpp"

#include <pthread.h>

#include <exception>
#include <filesystem>

namespace strata::rt {

CheckpointWriter::CheckpointWriter(WriteJob job) : job_(std::move(job)) {
  thread_ = std::thread([this] { run(); });
}

CheckpointWriter::~CheckpointWriter() {
  if (thread_.joinable()) thread_.join();
}

void CheckpointWriter::join() {
  if (thread_.joinable()) thread_.join();
}

void CheckpointWriter::abandon() {
  if (thread_.joinable()) thread_.detach();
}

void CheckpointWriter::run() {
  pthread_setname_np(pthread_self(), "strata ckpt");
  try {
    const std::filesystem::path dir(job_.partial_dir);
    ckpt::ShardWriter writer((dir / ckpt::shard_file_name(job_.rank)).string(), job_.rank);
    const float* next = job_.data;
    for (uint32_t r = 0; r < job_.ranges.size(); ++r) {
      const uint64_t count = job_.ranges[r].count;
      for (uint32_t slot = 0; slot < job_.slots; ++slot) {
        writer.write_block(r, slot, next, count);
        next += count;
      }
    }
    writer.finish();
    if (!job_.metadata_text.empty()) {
      ckpt::write_file_atomically((dir / ckpt::kMetadataFile).string(), job_.metadata_text);
    }
  } catch (const std::exception& e) {
    error_ = e.what();
    if (error_.empty()) error_ = "writing the checkpoint failed";
  }
  finished_.store(true, std::memory_order_release);
}

}  // namespace strata::rt
