// Optimizer state in CUDA device memory (offload_optimizer.device none with shards on a device,
// ABI 1.7): one zeroed device allocation laid out as the memory store's, stepped in place by the
// fused device kernels; checkpoints copy ranges to and from the host.
#include <string>

#include "device_ops.hpp"
#include "state_store.hpp"

namespace strata::offload {
namespace {

class DeviceStore final : public StateStore {
 public:
  DeviceStore(const sdk::Host& host, const StateLayout& layout) : host_(host) {
    const uint64_t floats = layout.floats_per_element * layout.elements();
    bytes_ = floats * sizeof(float);
    if (floats > 0) {
      data_ = static_cast<float*>(host_.try_alloc_device(bytes_, STRATA_MEM_OPTIMIZER_STATE));
      if (data_ == nullptr) {
        sdk::fail(STRATA_ERR_OUT_OF_MEMORY,
                  "offload: could not allocate " + format_bytes(bytes_) +
                      " of optimizer state on the device (runtime older than ABI 1.7, built "
                      "without CUDA, or the device is full)");
      }
      device::fill_zero(data_, bytes_, host_.cuda_stream(), "offload: zeroing the device state");
    }
    slices_ = whole_shard_slices(layout, data_);
  }
  ~DeviceStore() override {
    if (data_ != nullptr) host_.free(data_);
  }
  DeviceStore(const DeviceStore&) = delete;
  DeviceStore& operator=(const DeviceStore&) = delete;

  void for_each_piece(const Visitor& visit) override { visit(slices_); }

  void copy_range(Direction direction, size_t shard, size_t slot, uint64_t first, uint64_t count,
                  float* data) override {
    if (count == 0) return;
    const StateSlice& s = slices_[shard];
    float* at = s.state + slot * s.count + first;
    const size_t bytes = count * sizeof(float);
    if (direction == Direction::read) {
      device::copy(data, at, bytes, host_.cuda_stream(), "offload read_state: device to host");
    } else {
      device::copy(at, data, bytes, host_.cuda_stream(), "offload write_state: host to device");
    }
  }

  std::string describe() const override {
    return "CUDA device memory, " + format_bytes(bytes_) + " (stepped there by fused kernels)";
  }

 private:
  sdk::Host host_;
  float* data_ = nullptr;
  uint64_t bytes_ = 0;
  std::vector<StateSlice> slices_;
};

}  // namespace

std::unique_ptr<StateStore> make_device_store(const sdk::Host& host, const StateLayout& layout) {
  return std::make_unique<DeviceStore>(host, layout);
}

}  // namespace strata::offload
