// Which CUDA device a rank trains on. One device per local rank (rank r on a node takes device r)
// unless the user allows ranks to share devices (--share-device), then local rank modulo the
// visible devices. Pure, so that the rule and its refusals are tested without a GPU.
#pragma once

namespace strata::fmnist {

struct DeviceChoiceInput {
  int local_rank = 0;    // strata_world's local_rank
  int local_size = 1;    // ranks on this node
  int device_count = 0;  // cudaGetDeviceCount on this node
  bool share = false;    // --share-device
};

// The device ordinal; throws std::runtime_error naming the rank, the counts and the way out
// (--share-device, fewer ranks, CUDA_VISIBLE_DEVICES) when there is no device for the rank.
int choose_device(const DeviceChoiceInput& in);

}  // namespace strata::fmnist
