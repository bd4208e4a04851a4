#include "param_store.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <vector>

#include "io_queue.hpp"
#include "state_store.hpp"
#include "swap_file.hpp"

namespace strata::offload {
namespace {

void check_range(const strata_param_io_args& io, uint64_t size) {
  if (io.data == nullptr && io.bytes > 0) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "param_store_start: data is NULL");
  }
  if (io.offset > size || io.bytes > size - io.offset) {
    sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
              "param_store_start: bytes [" + std::to_string(io.offset) + ", " +
                  std::to_string(io.offset + io.bytes) + ") lie outside the store's " +
                  std::to_string(size) + " bytes");
  }
}

// Host memory, zeroed; page-locked when asked and the system allows it.
class MemoryParamStore final : public ParamStore {
 public:
  MemoryParamStore(const sdk::Host& host, uint64_t bytes, bool pin) : host_(host), bytes_(bytes) {
    if (bytes == 0) return;
    if (pin) data_ = host.try_alloc_pinned(bytes, STRATA_MEM_PARAMS);
    pinned_ = data_ != nullptr;
    if (pin && !pinned_) {
      host.log(STRATA_LOG_WARN,
               "offload_param.pin_memory: the system refused to lock %s (RLIMIT_MEMLOCK); the "
               "parameter partition stays in pageable memory",
               format_bytes(bytes).c_str());
    }
    if (data_ == nullptr) data_ = host.alloc(bytes, STRATA_MEM_PARAMS);
    std::memset(data_, 0, bytes);
  }
  ~MemoryParamStore() override {
    if (data_ != nullptr) host_.free(data_);
  }
  MemoryParamStore(const MemoryParamStore&) = delete;
  MemoryParamStore& operator=(const MemoryParamStore&) = delete;

  int32_t location() const override { return pinned_ ? STRATA_MEM_HOST_PINNED : STRATA_MEM_HOST; }
  void* data() const override { return data_; }
  uint64_t start(const strata_param_io_args& io) override {
    check_range(io, bytes_);
    char* at = static_cast<char*>(data_) + io.offset;
    if (io.bytes > 0) {
      if (io.write != 0) std::memcpy(at, io.data, io.bytes);
      if (io.write == 0) std::memcpy(io.data, at, io.bytes);
    }
    return ++tickets_;
  }
  void wait(uint64_t ticket) override {
    if (ticket == 0 || ticket > tickets_) {
      sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "param_store_wait: unknown ticket " +
                                                 std::to_string(ticket));
    }
  }
  std::string describe() const override {
    return format_bytes(bytes_) + (pinned_ ? " of pinned host memory" : " of host memory");
  }

 private:
  sdk::Host host_;
  uint64_t bytes_;
  void* data_ = nullptr;
  bool pinned_ = false;
  uint64_t tickets_ = 0;
};

// One unlinked file, mapped shared (data()); transfers go through io_uring in chunks of at most
// kChunk bytes (a read or write moves at most 2 GiB - 4 KiB per call on Linux; the optimizer's
// pieces stay under 1 GiB too). Each chunk in flight holds one of kTags queue tags; a chunk started while all are busy
// first completes the oldest, whose outcome is kept for its ticket's wait.
class FileParamStore final : public ParamStore {
 public:
  FileParamStore(const sdk::Host& host, const OffloadConfig& config, uint64_t bytes)
      : host_(host), file_(config.param_nvme_path, "offload_param.nvme_path",
                           "parameter partition", /*direct=*/false) {
    file_.reserve(bytes);
    host_.account(STRATA_MEM_PARAMS, STRATA_MEM_DISK, static_cast<int64_t>(file_.size()));
    queue_ = std::make_unique<IoQueue>(file_.fd(), kTags, file_.name() + " (unlinked)");
    // The sharding plugin may page the optimizer's masters through this mapping: the kernel
    // moves them between drive and page cache as the step walks them, and can reclaim the
    // pages, so the step holds no master partition of its own (buffered transfers see the
    // same bytes: the file is not opened O_DIRECT).
    if (file_.size() > 0) {
      void* at = mmap(nullptr, file_.size(), PROT_READ | PROT_WRITE, MAP_SHARED, file_.fd(), 0);
      if (at != MAP_FAILED) {
        mapping_ = at;
      } else {
        host_.log(STRATA_LOG_WARN, "offload_param nvme: mmap of %s failed (%s); the masters are "
                  "read into memory for each step", file_.dir().c_str(), std::strerror(errno));
      }
    }
    if (!queue_->fallback_reason().empty()) {
      host_.log(STRATA_LOG_WARN,
                "offload_param nvme: io_uring is unavailable (%s); parameter reads and writes "
                "in %s run synchronously",
                queue_->fallback_reason().c_str(), file_.dir().c_str());
    }
  }
  ~FileParamStore() override {
    queue_->drain();
    if (mapping_ != nullptr) munmap(mapping_, file_.size());
    host_.account(STRATA_MEM_PARAMS, STRATA_MEM_DISK, -static_cast<int64_t>(file_.size()));
  }
  FileParamStore(const FileParamStore&) = delete;
  FileParamStore& operator=(const FileParamStore&) = delete;

  int32_t location() const override { return STRATA_MEM_DISK; }
  void* data() const override { return mapping_; }

  uint64_t start(const strata_param_io_args& io) override {
    check_range(io, file_.size());
    const uint64_t ticket = ++tickets_;
    outcome_.emplace(ticket, "");
    auto* bytes = static_cast<char*>(io.data);
    for (uint64_t done = 0; done < io.bytes; done += kChunk) {
      const uint64_t n = std::min(kChunk, io.bytes - done);
      const unsigned tag = free_tag();
      in_flight_[tag] = ticket;
      if (io.write != 0) {
        queue_->write(tag, bytes + done, n, io.offset + done);
      } else {
        queue_->read(tag, bytes + done, n, io.offset + done);
      }
    }
    return ticket;
  }

  void wait(uint64_t ticket) override {
    auto it = outcome_.find(ticket);
    if (it == outcome_.end()) {
      sdk::fail(STRATA_ERR_INVALID_ARGUMENT,
                "param_store_wait: unknown or already waited ticket " + std::to_string(ticket));
    }
    for (unsigned tag = 0; tag < kTags; ++tag) {
      if (in_flight_[tag] == ticket) finish(tag);
    }
    const std::string error = it->second;
    outcome_.erase(it);
    if (!error.empty()) sdk::fail(STRATA_ERR_INTERNAL, error);
  }

  std::string describe() const override {
    return format_bytes(file_.size()) + " in " + file_.dir() + " (unlinked file, " +
           (queue_->fallback_reason().empty() ? "io_uring)" : "synchronous I/O)");
  }

 private:
  static constexpr unsigned kTags = 32;
  static constexpr uint64_t kChunk = uint64_t{1} << 30;

  // Completes the chunk on `tag` and keeps its ticket's first error.
  void finish(unsigned tag) {
    const uint64_t ticket = in_flight_[tag];
    in_flight_[tag] = 0;
    try {
      queue_->wait(tag);
    } catch (const std::exception& e) {
      std::string& error = outcome_[ticket];
      if (error.empty()) error = e.what();
    }
  }

  // A tag with nothing in flight (completing the oldest chunk when every tag is busy).
  unsigned free_tag() {
    unsigned oldest = 0;
    for (unsigned tag = 0; tag < kTags; ++tag) {
      if (in_flight_[tag] == 0) return tag;
      if (in_flight_[tag] < in_flight_[oldest]) oldest = tag;
    }
    finish(oldest);
    return oldest;
  }

  sdk::Host host_;
  SwapFile file_;
  std::unique_ptr<IoQueue> queue_;
  std::vector<uint64_t> in_flight_ = std::vector<uint64_t>(kTags, 0);  // per tag: its ticket
  std::map<uint64_t, std::string> outcome_;  // tickets not yet waited -> first error ("" = none)
  uint64_t tickets_ = 0;
  void* mapping_ = nullptr;  // the whole file, MAP_SHARED
};

}  // namespace

std::unique_ptr<ParamStore> open_param_store(const sdk::Host& host, const OffloadConfig& config,
                                             uint64_t bytes) {
  if (config.param_device == OffloadDevice::nvme) {
    return std::make_unique<FileParamStore>(host, config, bytes);
  }
  return std::make_unique<MemoryParamStore>(host, bytes, config.param_pin_memory);
}

}  // namespace strata::offload
