#include "validate.hpp"

#include "dtypes.hpp"

#include <strata/plugin.hpp>

#include <string>

namespace strata::allreduce_gloo {
namespace {

[[noreturn]] void invalid(const char* call, const std::string& message) {
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, std::string(call) + ": " + message);
}

}  // namespace

Buffer check_buffer(const char* call, const char* name, const strata_buffer* buffer) {
  // Messages are built only on failure: this runs on every collective.
  const auto arg = [&](const char* field) { return std::string(name) + field; };
  if (buffer == nullptr) invalid(call, arg(" is NULL; expected a strata_buffer"));
  if (buffer->struct_size < sizeof(strata_buffer)) {
    sdk::fail(STRATA_ERR_ABI, std::string(call) + ": " + arg(".struct_size (") +
                                  std::to_string(buffer->struct_size) +
                                  ") is smaller than strata_buffer (" +
                                  std::to_string(sizeof(strata_buffer)) + ")");
  }
  const size_t element_size = sdk::dtype_size(buffer->dtype);
  if (element_size == 0) {
    invalid(call, arg(".dtype (") + std::to_string(buffer->dtype) +
                      ") is not a strata_dtype (expected 0.." +
                      std::to_string(STRATA_DTYPE_COUNT - 1) + ")");
  }
  if (buffer->device.type != STRATA_DEVICE_HOST) {
    const std::string device = buffer->device.type == STRATA_DEVICE_CUDA
                                   ? "cuda:" + std::to_string(buffer->device.index)
                                   : "device type " + std::to_string(buffer->device.type);
    sdk::fail(STRATA_ERR_UNSUPPORTED, std::string(call) + ": " + arg(" is on ") + device +
                                          "; allreduce-gloo moves host memory only");
  }
  if (buffer->data == nullptr && buffer->count > 0) {
    invalid(call, arg(".data is NULL but ") + arg(".count is ") + std::to_string(buffer->count));
  }
  if (buffer->count > SIZE_MAX / element_size) {
    invalid(call, arg(".count (") + std::to_string(buffer->count) + ") is too large");
  }
  return Buffer{buffer->data, buffer->count, buffer->dtype, element_size};
}

BufferPair check_pair(const char* call, const strata_buffer* send_arg,
                      const strata_buffer* recv_arg) {
  const Buffer send = check_buffer(call, "send", send_arg);
  const Buffer recv = check_buffer(call, "recv", recv_arg);
  if (send.dtype != recv.dtype) {
    invalid(call, std::string("recv.dtype (") + sdk::dtype_name(recv.dtype) +
                      ") must equal send.dtype (" + sdk::dtype_name(send.dtype) + ")");
  }
  return {send, recv};
}

void check_count(const char* call, const char* name, uint64_t actual, uint64_t expected,
                 const char* relation) {
  if (actual != expected) {
    invalid(call, std::string(name) + ".count (" + std::to_string(actual) + ") must equal " +
                      relation + " (" + std::to_string(expected) + ")");
  }
}

void check_op(const char* call, int32_t op) {
  if (!is_known_op(op)) {
    invalid(call, "op (" + std::to_string(op) + ") must be SUM (0), AVG (1), MIN (2) or MAX (3)");
  }
}

uint64_t saturating_product(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
}

bool check_in_place(const char* call, const Buffer& send, const Buffer& recv, const char* in_place,
                    const char* in_place_rule) {
  if (send.data == in_place) return true;
  const auto s = reinterpret_cast<uintptr_t>(send.data);
  const auto r = reinterpret_cast<uintptr_t>(recv.data);
  const bool disjoint = s + send.bytes() <= r || r + recv.bytes() <= s;
  if (send.bytes() != 0 && recv.bytes() != 0 && !disjoint) {
    invalid(call, std::string("send and recv overlap; for in-place use ") + in_place_rule +
                      ", otherwise they must not overlap");
  }
  return false;
}

}  // namespace strata::allreduce_gloo
