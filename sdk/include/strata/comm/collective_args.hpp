// strata/comm/collective_args.hpp — header-only argument checks for the collectives of a comm
// plugin (strata_comm_ops): buffers (in the memory the plugin moves), counts, dtypes, reduce ops, and the
// in-place rules. Each failure throws sdk::Error (turned into a status and message by
// sdk::guard) with a sentence that names the call, the argument and the expected relation, e.g.
// "allreduce: recv.count (7) must equal send.count (8)".
//
// Every function is pure apart from the throw, so all are thread-safe. `call`, `name` and the
// other strings are read only during the call. Messages are built only on failure: these run on
// every collective. C++17 or later (GCC or Clang: __builtin_mul_overflow).
#pragma once

#include <strata/comm/reduce_ops.hpp>
#include <strata/plugin.hpp>
#include <strata/plugin_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace strata::sdk::comm {

// Throws sdk::Error(STRATA_ERR_INVALID_ARGUMENT, "<call>: <message>").
[[noreturn]] inline void invalid_argument(const char* call, const std::string& message) {
  fail(STRATA_ERR_INVALID_ARGUMENT, std::string(call) + ": " + message);
}

// A checked strata_buffer: known dtype, in memory the plugin moves, data non-null when count > 0, and
// count * element_size fits in size_t. It points into the caller's memory and owns nothing: valid
// as long as the strata_buffer's memory is.
struct Buffer {
  void* data;
  uint64_t count;
  int32_t dtype;
  size_t element_size;

  size_t bytes() const { return static_cast<size_t>(count) * element_size; }
  char* at(uint64_t element) const { return static_cast<char*>(data) + element * element_size; }
};

// "host memory", "CUDA device memory", "host and CUDA device memory": what a comm plugin whose
// caps.device_mask is `device_mask` moves, for messages.
inline std::string memory_moved(uint32_t device_mask) {
  const bool host = (device_mask & STRATA_DEVICE_BIT(STRATA_DEVICE_HOST)) != 0;
  const bool cuda = (device_mask & STRATA_DEVICE_BIT(STRATA_DEVICE_CUDA)) != 0;
  if (host && cuda) return "host and CUDA device memory";
  if (cuda) return "CUDA device memory";
  if (host) return "host memory";
  return "no memory (device_mask " + std::to_string(device_mask) + ")";
}

// "host", "cuda:1", "device type 7": where a buffer or parameter lives, for messages.
inline std::string device_name(const strata_device& device) {
  if (device.type == STRATA_DEVICE_HOST) return "host";
  if (device.type == STRATA_DEVICE_CUDA) return "cuda:" + std::to_string(device.index);
  return "device type " + std::to_string(device.type);
}

// Checks `buffer` (the argument called `name`, e.g. "send") of `call`. `plugin` names the plugin
// in the message for a buffer on a device outside `device_mask` (the plugin's caps.device_mask;
// default host only): "...; <plugin> moves host memory only", STRATA_ERR_UNSUPPORTED. A
// struct_size below strata_buffer's is STRATA_ERR_ABI; the rest is STRATA_ERR_INVALID_ARGUMENT.
inline Buffer check_buffer(const char* call, const char* name, const strata_buffer* buffer,
                           const char* plugin,
                           uint32_t device_mask = STRATA_DEVICE_BIT(STRATA_DEVICE_HOST)) {
  const auto arg = [&](const char* field) { return std::string(name) + field; };
  if (buffer == nullptr) invalid_argument(call, arg(" is NULL; expected a strata_buffer"));
  if (buffer->struct_size < sizeof(strata_buffer)) {
    fail(STRATA_ERR_ABI, std::string(call) + ": " + arg(".struct_size (") +
                             std::to_string(buffer->struct_size) +
                             ") is smaller than strata_buffer (" +
                             std::to_string(sizeof(strata_buffer)) + ")");
  }
  const size_t element_size = dtype_size(buffer->dtype);
  if (element_size == 0) {
    invalid_argument(call, arg(".dtype (") + std::to_string(buffer->dtype) +
                               ") is not a strata_dtype (expected 0.." +
                               std::to_string(STRATA_DTYPE_COUNT - 1) + ")");
  }
  const bool known_type = buffer->device.type >= 0 && buffer->device.type < 32;
  if (!known_type || (device_mask & STRATA_DEVICE_BIT(buffer->device.type)) == 0) {
    fail(STRATA_ERR_UNSUPPORTED, std::string(call) + ": " + arg(" is ") +
                                     (buffer->device.type == STRATA_DEVICE_HOST ? "in " : "on ") +
                                     device_name(buffer->device) +
                                     (buffer->device.type == STRATA_DEVICE_HOST ? " memory" : "") +
                                     "; " + plugin + " moves " + memory_moved(device_mask) +
                                     " only");
  }
  if (buffer->data == nullptr && buffer->count > 0) {
    invalid_argument(call,
                     arg(".data is NULL but ") + arg(".count is ") + std::to_string(buffer->count));
  }
  if (buffer->count > SIZE_MAX / element_size) {
    invalid_argument(call, arg(".count (") + std::to_string(buffer->count) + ") is too large");
  }
  return Buffer{buffer->data, buffer->count, buffer->dtype, element_size};
}

// A collective's send and recv buffers, each checked, of the same dtype.
struct BufferPair {
  Buffer send;
  Buffer recv;
};

// check_buffer() of "send" and "recv", then "recv.dtype (...) must equal send.dtype (...)".
// With a device_mask of more than one device type, both must also be on the same device.
inline BufferPair check_pair(const char* call, const strata_buffer* send_arg,
                             const strata_buffer* recv_arg, const char* plugin,
                             uint32_t device_mask = STRATA_DEVICE_BIT(STRATA_DEVICE_HOST)) {
  const Buffer send = check_buffer(call, "send", send_arg, plugin, device_mask);
  const Buffer recv = check_buffer(call, "recv", recv_arg, plugin, device_mask);
  if (send.dtype != recv.dtype) {
    invalid_argument(call, std::string("recv.dtype (") + dtype_name(recv.dtype) +
                               ") must equal send.dtype (" + dtype_name(send.dtype) + ")");
  }
  if (send_arg->device.type != recv_arg->device.type ||
      (send_arg->device.type != STRATA_DEVICE_HOST &&
       send_arg->device.index != recv_arg->device.index)) {
    invalid_argument(call, "recv is on " + device_name(recv_arg->device) + " but send is on " +
                               device_name(send_arg->device) + "; both must be on one device");
  }
  return {send, recv};
}

// "<call>: <name>.count (<actual>) must equal <relation> (<expected>)"
inline void check_count(const char* call, const char* name, uint64_t actual, uint64_t expected,
                        const char* relation) {
  if (actual != expected) {
    invalid_argument(call, std::string(name) + ".count (" + std::to_string(actual) +
                               ") must equal " + relation + " (" + std::to_string(expected) + ")");
  }
}

// "<call>: op (<op>) must be SUM (0), AVG (1), MIN (2) or MAX (3)" unless is_known_op(op).
inline void check_op(const char* call, int32_t op) {
  if (!is_known_op(op)) {
    invalid_argument(call, "op (" + std::to_string(op) +
                               ") must be SUM (0), AVG (1), MIN (2) or MAX (3)");
  }
}

// a * b, or UINT64_MAX if that overflows (so that a count check fails instead of wrapping).
inline uint64_t saturating_product(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
}

// allgatherv's per-rank arrays (size entries each): "<call>: recv_counts is NULL; expected size
// entries", then the same of displs.
inline void check_counts_and_displs(const char* call, const uint64_t* recv_counts,
                                    const uint64_t* displs) {
  if (recv_counts == nullptr) invalid_argument(call, "recv_counts is NULL; expected size entries");
  if (displs == nullptr) invalid_argument(call, "displs is NULL; expected size entries");
}

// allgatherv: rank `r`'s block, displs[r] + recv_counts[r], lies within `recv` (no overflow).
inline void check_block(const char* call, const Buffer& recv, const uint64_t* recv_counts,
                        const uint64_t* displs, size_t r) {
  if (displs[r] > recv.count || recv_counts[r] > recv.count - displs[r]) {
    // Built by appending: GCC 12 at -O3 flags "literal" + std::string with a false -Wrestrict.
    std::string index = "[";
    index += std::to_string(r);
    index += ']';
    invalid_argument(call, "displs" + index + " + recv_counts" + index + " (" +
                               std::to_string(displs[r]) + " + " + std::to_string(recv_counts[r]) +
                               ") must not exceed recv.count (" + std::to_string(recv.count) + ")");
  }
}

// "<call>: root (<root>) must be a rank in [0, <size>)" unless it is.
inline void check_root(const char* call, int32_t root, int size) {
  if (root < 0 || root >= size) {
    invalid_argument(call, "root (" + std::to_string(root) + ") must be a rank in [0, " +
                               std::to_string(size) + ")");
  }
}

// The only allowed overlap of `send` and `recv` is none at all or send.data == `in_place` exactly
// (then true: the collective runs in place). `in_place_rule` words that rule for the message,
// e.g. "send.data == recv.data". Empty buffers overlap nothing.
inline bool check_in_place(const char* call, const Buffer& send, const Buffer& recv,
                           const char* in_place, const char* in_place_rule) {
  if (send.data == in_place) return true;
  const auto s = reinterpret_cast<uintptr_t>(send.data);
  const auto r = reinterpret_cast<uintptr_t>(recv.data);
  const bool disjoint = s + send.bytes() <= r || r + recv.bytes() <= s;
  if (send.bytes() != 0 && recv.bytes() != 0 && !disjoint) {
    invalid_argument(call, std::string("send and recv overlap; for in-place use ") +
                               in_place_rule + ", otherwise they must not overlap");
  }
  return false;
}

// The arguments of any collective (strata_comm_ops), checked to be present and to hold ABI 1.3's
// fields, which every collective reads: INVALID_ARGUMENT for NULL, ABI for a smaller struct.
// Returns *args (valid as long as the caller's struct is).
inline const strata_coll_args& coll_args(const strata_coll_args* args, const char* call) {
  if (args == nullptr) invalid_argument(call, "args is NULL");
  if (!STRATA_STRUCT_HAS(args, strata_coll_args, displs)) {
    fail(STRATA_ERR_ABI, std::string(call) + ": args->struct_size " +
                             std::to_string(args->struct_size) +
                             " is smaller than ABI 1.3's strata_coll_args");
  }
  return *args;
}

// alltoallv's arguments: ABI 1.10's struct, the four per-rank arrays (`size` entries each), and
// every block inside its buffer. Returns the checked send and recv buffers (the same dtype).
inline BufferPair alltoallv_args(const strata_coll_args* args, int size, const char* plugin,
                                 uint32_t device_mask = STRATA_DEVICE_BIT(STRATA_DEVICE_HOST)) {
  const char* call = "alltoallv";
  if (args == nullptr) invalid_argument(call, "args is NULL");
  if (!STRATA_STRUCT_HAS(args, strata_coll_args, send_displs)) {
    fail(STRATA_ERR_ABI, std::string(call) + ": args->struct_size " +
                             std::to_string(args->struct_size) +
                             " is smaller than ABI 1.10's strata_coll_args (send_counts, "
                             "send_displs)");
  }
  const BufferPair pair = check_pair(call, args->send, args->recv, plugin, device_mask);
  check_counts_and_displs(call, args->recv_counts, args->displs);
  if (args->send_counts == nullptr) invalid_argument(call, "send_counts is NULL; expected size entries");
  if (args->send_displs == nullptr) invalid_argument(call, "send_displs is NULL; expected size entries");
  for (int r = 0; r < size; ++r) {
    check_block(call, pair.recv, args->recv_counts, args->displs, r);
    const uint64_t at = args->send_displs[r], n = args->send_counts[r];
    if (at > pair.send.count || n > pair.send.count - at) {
      std::string index = "[";
      index += std::to_string(r);
      index += ']';
      invalid_argument(call, "send_displs" + index + " + send_counts" + index + " (" +
                                 std::to_string(at) + " + " + std::to_string(n) +
                                 ") must not exceed send.count (" +
                                 std::to_string(pair.send.count) + ")");
    }
  }
  if (pair.send.count > 0 && pair.recv.count > 0 && pair.send.data == pair.recv.data) {
    invalid_argument(call, "send.data == recv.data; alltoallv is not in place");
  }
  return pair;
}

// split()'s arguments: present, ABI 1.10's, color >= 0 or STRATA_COMM_SPLIT_NONE.
inline const strata_comm_split_args& split_args(const strata_comm_split_args* args) {
  if (args == nullptr) invalid_argument("split", "args is NULL");
  if (!STRATA_STRUCT_HAS(args, strata_comm_split_args, key)) {
    fail(STRATA_ERR_ABI, "split: args->struct_size " + std::to_string(args->struct_size) +
                             " is smaller than ABI 1.10's strata_comm_split_args");
  }
  if (args->color < 0 && args->color != STRATA_COMM_SPLIT_NONE) {
    invalid_argument("split", "color (" + std::to_string(args->color) +
                                  ") must be >= 0 or STRATA_COMM_SPLIT_NONE (-1)");
  }
  return *args;
}

// query()'s write-out: copies the fields of `full` that lie inside the caller's caps->struct_size
// (an older, smaller caps is fine; one smaller than ABI 1.0's is an ABI error, NULL an invalid
// argument). Writes only *caps.
inline void write_comm_caps(strata_comm_caps* caps, const strata_comm_caps& full) {
  if (caps == nullptr) invalid_argument("query", "caps is NULL");
  if (caps->struct_size < STRATA_COMM_CAPS_SIZE_1_0) {
    fail(STRATA_ERR_ABI, "query: caps->struct_size (" + std::to_string(caps->struct_size) +
                             ") is smaller than ABI 1.0's strata_comm_caps (" +
                             std::to_string(STRATA_COMM_CAPS_SIZE_1_0) + ")");
  }
  const size_t size = caps->struct_size < sizeof(full) ? caps->struct_size : sizeof(full);
  std::memcpy(reinterpret_cast<char*>(caps) + sizeof(size_t),
              reinterpret_cast<const char*>(&full) + sizeof(size_t), size - sizeof(size_t));
}

}  // namespace strata::sdk::comm
