// offload_param (ABI 1.8's parameter store): the bytes of the sharding stratum's parameter
// partition (ZeRO stage 3), placed where the config says. In host memory (device cpu, page-locked
// with pin_memory) the sharding plugin reads and writes them in place; on a drive (device nvme)
// they are one file under offload_param.nvme_path, created 0600 and unlinked at once as the
// optimizer's is, and every transfer goes through io_uring.
//
// The file is opened without O_DIRECT: the sharding plugin moves its buckets' slices, which are
// 64-byte aligned, not 4 KiB, and bouncing every transfer through aligned buffers would cost a
// copy the page cache already makes. The page cache is the kernel's to reclaim, so it never
// holds the process's memory the way a resident copy would.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <strata/plugin.hpp>

#include "offload_config.hpp"

namespace strata::offload {

class ParamStore {
 public:
  virtual ~ParamStore() = default;
  virtual int32_t location() const = 0;   // a strata_mem_location
  // Memory stores: the bytes. Disk: a shared mapping of the file (ABI 1.9), or nullptr where
  // the system refused one.
  virtual void* data() const = 0;
  // Starts a transfer (memory: done on return) and returns its ticket for wait().
  virtual uint64_t start(const strata_param_io_args& io) = 0;
  virtual void wait(uint64_t ticket) = 0;
  // For the log: "1.5 MiB pinned host memory", "1.5 MiB in /nvme (unlinked file, io_uring)".
  virtual std::string describe() const = 0;
};

// Opens a store of `bytes` bytes as config.param_device says (cpu or nvme; never none). Throws
// sdk::Error naming offload_param.nvme_path and the bytes needed when the drive cannot hold it.
std::unique_ptr<ParamStore> open_param_store(const sdk::Host& host, const OffloadConfig& config,
                                             uint64_t bytes);

}  // namespace strata::offload
