#include "param_store.hpp"

#include <cstddef>

namespace strata::zero {

ParamStore::ParamStore(const sdk::Host& host, uint64_t bytes) {
  const strata_host_api* api = host.raw();
  if (!STRATA_STRUCT_HAS(api, strata_host_api, offload_self) || api->offload == nullptr) return;
  const strata_offload_ops* ops = api->offload;
  if (ops->header.struct_size < STRATA_OFFLOAD_OPS_SIZE_1_8 ||
      ops->param_store_open == nullptr || ops->param_store_start == nullptr ||
      ops->param_store_wait == nullptr) {
    return;  // an offload plugin without a store: the partitions stay here
  }
  strata_param_store_args args{};
  args.struct_size = sizeof args;
  args.bytes = bytes;
  strata_error err = sdk::make_error();
  sdk::check(ops->param_store_open(api->offload_self, &args, &err), err, "offload stratum");
  if (args.location < 0) return;
  if (args.location != STRATA_MEM_DISK && args.data == nullptr && bytes > 0) {
    sdk::fail(STRATA_ERR_INTERNAL, "offload stratum: param_store_open gave a memory store no data");
  }
  ops_ = ops;
  self_ = api->offload_self;
  location_ = args.location;
  memory_ = args.location == STRATA_MEM_DISK ? nullptr : args.data;
  // ABI 1.9: a disk store may also be mapped (an older plugin's `data` said nothing there).
  if (args.location == STRATA_MEM_DISK && ops->header.built_minor >= 9) mapping_ = args.data;
  read_ahead_ = args.read_ahead_elements;
}

uint64_t ParamStore::start(int32_t write, uint64_t offset, void* data, uint64_t bytes) const {
  strata_param_io_args io{};
  io.struct_size = sizeof io;
  io.write = write;
  io.offset = offset;
  io.bytes = bytes;
  io.data = data;
  uint64_t ticket = 0;
  strata_error err = sdk::make_error();
  sdk::check(ops_->param_store_start(self_, &io, &ticket, &err), err, "offload stratum");
  return ticket;
}

uint64_t ParamStore::start_read(uint64_t offset, void* data, uint64_t bytes) const {
  return start(0, offset, data, bytes);
}

uint64_t ParamStore::start_write(uint64_t offset, const void* data, uint64_t bytes) const {
  return start(1, offset, const_cast<void*>(data), bytes);
}

void ParamStore::wait(uint64_t ticket) const {
  strata_error err = sdk::make_error();
  sdk::check(ops_->param_store_wait(self_, ticket, &err), err, "offload stratum");
}

}  // namespace strata::zero
