// The file that holds one rank's optimizer state under offload_optimizer.nvme_path (or its
// parameter partition under offload_param.nvme_path). It is created with mode 0600 and unlinked at
// once, so the kernel frees its blocks when the process exits by any means (a killed rank leaves
// nothing behind on the drive).
#pragma once

#include <cstdint>
#include <string>

namespace strata::offload {

class SwapFile {
 public:
  // Checks that `dir` exists, is a directory and takes a new file. Throws sdk::Error naming
  // `key` (the config path, "offload_optimizer.nvme_path") and the directory. `holds` says what
  // the file is for in messages and its name ("optimizer state"); `direct` asks for O_DIRECT
  // where the file system has it (transfers must then be aligned to kDirectAlignment).
  SwapFile(const std::string& dir, const std::string& key,
           const std::string& holds = "optimizer state", bool direct = true);
  ~SwapFile();
  SwapFile(const SwapFile&) = delete;
  SwapFile& operator=(const SwapFile&) = delete;

  // Makes the file `bytes` long, zero-filled and allocated on the drive, after checking the free
  // space; a full drive fails here, before training starts, naming the bytes needed and available.
  void reserve(uint64_t bytes);

  int fd() const { return fd_; }
  // Whether reads and writes bypass the page cache (O_DIRECT; not every file system has it).
  bool direct() const { return direct_; }
  // The name the file had before it was unlinked, for messages.
  const std::string& name() const { return name_; }
  const std::string& dir() const { return dir_; }
  uint64_t size() const { return size_; }

 private:
  std::string dir_;
  std::string key_;
  std::string holds_;
  std::string name_;
  int fd_ = -1;
  bool direct_ = false;
  uint64_t size_ = 0;
};

// O_DIRECT transfers must start and end on this boundary (the common logical block size of
// NVMe drives is 512 or 4096 bytes; 4096 serves both).
inline constexpr uint64_t kDirectAlignment = 4096;

}  // namespace strata::offload
