// Stage 3's partition where offload_param puts it (ZeRO-Infinity; ABI 1.8): the offload stratum's
// parameter store, reached through the host table's `offload`. The store holds this rank's
// parameter partition (f16/bf16 models; an fp32 model's slices are its masters) followed by its
// fp32 master partition:
//   [param partition, model dtype, padded to 64 bytes | master partition, fp32]
// In host memory (offload_param.device cpu) both live there in place. On a drive (nvme) the
// gatherer reads each group's slices ahead of use, and the masters (with an f16/bf16 model, the
// parameter partition too) are paged in for the optimizer step and written back after it.
// Without offload_param, a runtime or offload plugin older than 1.8, or no offload stratum, the
// store is inactive and the partitions stay in this plugin's own memory.
#pragma once

#include <strata/plugin.hpp>

#include <cstdint>

namespace strata::zero {

class ParamStore {
 public:
  ParamStore() = default;  // inactive
  // Asks the offload stratum for a store of `bytes` bytes (from finalize on). Throws what the
  // offload plugin refused (a drive missing, read-only or too small, naming path and bytes).
  ParamStore(const sdk::Host& host, uint64_t bytes);

  bool active() const { return location_ >= 0; }
  bool on_disk() const { return location_ == STRATA_MEM_DISK; }
  // Memory stores: the bytes themselves; nullptr otherwise.
  unsigned char* memory() const { return static_cast<unsigned char*>(memory_); }
  // Disk stores (ABI 1.9): a shared mapping of the file, through which the bytes may be read and
  // written in place (the kernel pages them); nullptr when the offload stratum gave none.
  unsigned char* mapping() const { return static_cast<unsigned char*>(mapping_); }
  // Gathered elements the store wants kept in flight ahead of use; 0: no bound.
  uint64_t read_ahead_elements() const { return read_ahead_; }

  uint64_t start_read(uint64_t offset, void* data, uint64_t bytes) const;
  uint64_t start_write(uint64_t offset, const void* data, uint64_t bytes) const;
  void wait(uint64_t ticket) const;
  // Blocking transfers.
  void read(uint64_t offset, void* data, uint64_t bytes) const { wait(start_read(offset, data, bytes)); }
  void write(uint64_t offset, const void* data, uint64_t bytes) const {
    wait(start_write(offset, data, bytes));
  }

 private:
  uint64_t start(int32_t write, uint64_t offset, void* data, uint64_t bytes) const;

  const strata_offload_ops* ops_ = nullptr;
  void* self_ = nullptr;
  int32_t location_ = -1;
  void* memory_ = nullptr;
  void* mapping_ = nullptr;
  uint64_t read_ahead_ = 0;
};

}  // namespace strata::zero
