// The host's own collectives (strata_allreduce, strata_allgather, strata_broadcast,
// strata_barrier). Without the manifest's "join" they go straight to the comm stratum. With it,
// each belongs to the micro-batch it is made in (engine_join.cpp): it is recorded so that a rank
// that joins later repeats it, and while some rank has joined it runs against that rank's
// replay, which contributes the operation's identity (0 for a sum, the lowest value for a max),
// as Horovod's joined ranks do. An average is a sum and a count of its contributors (a second
// one-number allreduce), so it divides by the ranks that contributed (integers truncating, f16
// and bf16 through f32).
#include "engine/engine.hpp"
#include "error.hpp"

#include <strata/half.hpp>
#include <strata/plugin.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace strata::rt {
namespace {

template <class T>
void fill(std::vector<unsigned char>& bytes, uint64_t count, T value) {
  bytes.resize(count * sizeof(T));
  for (uint64_t i = 0; i < count; ++i) std::memcpy(bytes.data() + i * sizeof(T), &value, sizeof(T));
}

// `count` elements of `dtype` that leave `op`'s result unchanged.
std::vector<unsigned char> identity_of(int32_t op, int32_t dtype, uint64_t count) {
  std::vector<unsigned char> bytes(count * sdk::dtype_size(dtype), 0);
  if (op != STRATA_MAX && op != STRATA_MIN) return bytes;  // SUM (and AVG, run as SUM): zeros
  const bool max = op == STRATA_MAX;
  switch (dtype) {
    case STRATA_F32: fill<float>(bytes, count, max ? -std::numeric_limits<float>::infinity()
                                                   : std::numeric_limits<float>::infinity()); break;
    case STRATA_F64: fill<double>(bytes, count, max ? -std::numeric_limits<double>::infinity()
                                                    : std::numeric_limits<double>::infinity()); break;
    case STRATA_F16: fill<uint16_t>(bytes, count, max ? 0xFC00 : 0x7C00); break;  // -inf, +inf
    case STRATA_BF16: fill<uint16_t>(bytes, count, max ? 0xFF80 : 0x7F80); break;
    case STRATA_I32: fill<int32_t>(bytes, count, max ? std::numeric_limits<int32_t>::min()
                                                     : std::numeric_limits<int32_t>::max()); break;
    case STRATA_I64: fill<int64_t>(bytes, count, max ? std::numeric_limits<int64_t>::min()
                                                     : std::numeric_limits<int64_t>::max()); break;
    case STRATA_U8: fill<uint8_t>(bytes, count, max ? 0 : 255); break;
    default: break;
  }
  return bytes;
}

template <class T>
void divide(void* data, uint64_t count, uint64_t by) {
  auto* values = static_cast<T*>(data);
  for (uint64_t i = 0; i < count; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      values[i] /= static_cast<T>(by);
    } else if constexpr (std::is_signed_v<T>) {  // in 64 bits: `by` may not fit T
      values[i] = static_cast<T>(static_cast<int64_t>(values[i]) / static_cast<int64_t>(by));
    } else {
      values[i] = static_cast<T>(static_cast<uint64_t>(values[i]) / by);
    }
  }
}

}  // namespace

void Engine::host_allreduce(const void* send, void* recv, uint64_t count, int32_t dtype,
                            int32_t op) {
  if (!join_tracking()) return collectives_->allreduce(send, recv, count, dtype, op);
  open_micro_batch();
  // An average is a sum and a count of the ranks that contribute to it: a rank that joins inside
  // this micro-batch repeats both with 0, even though it was counted when the micro-batch opened.
  // Recorded once the comm stratum took the call.
  const bool average = op == STRATA_AVG;
  collectives_->allreduce(send, recv, count, dtype, average ? STRATA_SUM : op);
  if (average) {
    const int64_t one = 1;
    int64_t contributors = 0;
    collectives_->allreduce(&one, &contributors, 1, STRATA_I64, STRATA_SUM);
    divide_average(recv, count, dtype, static_cast<uint64_t>(contributors));
  }
  record_call({CallKind::HostAllreduce, 0, 0, count, dtype, op});
}

void Engine::divide_average(void* recv, uint64_t count, int32_t dtype, uint64_t by) {
  switch (dtype) {
    case STRATA_F32: divide<float>(recv, count, by); break;
    case STRATA_F64: divide<double>(recv, count, by); break;
    case STRATA_I32: divide<int32_t>(recv, count, by); break;  // truncating, as STRATA_AVG
    case STRATA_I64: divide<int64_t>(recv, count, by); break;
    case STRATA_U8: divide<uint8_t>(recv, count, by); break;
    case STRATA_F16: case STRATA_BF16: {
      auto* values = static_cast<uint16_t*>(recv);
      const bool bf16 = dtype == STRATA_BF16;
      for (uint64_t i = 0; i < count; ++i) {
        const float v = (bf16 ? bf16_to_float(values[i]) : f16_to_float(values[i])) / float(by);
        values[i] = bf16 ? float_to_bf16(v) : float_to_f16(v);
      }
      break;
    }
    default: break;
  }
}

void Engine::host_allgather(const void* send, void* recv, uint64_t count_per_rank, int32_t dtype) {
  if (join_tracking()) open_micro_batch();
  collectives_->allgather(send, recv, count_per_rank, dtype);  // a joined rank's part: zeros
  if (join_tracking()) record_call({CallKind::HostAllgather, 0, 0, count_per_rank, dtype, 0});
}

void Engine::host_broadcast(void* buf, uint64_t count, int32_t dtype, int32_t root) {
  // The root may be a joined rank, which has nothing to send: refused while one has joined.
  refuse_while_joined("broadcast");
  collectives_->broadcast(buf, count, dtype, root);
}

void Engine::host_barrier() {
  if (join_tracking()) open_micro_batch();
  collectives_->barrier();
  if (join_tracking()) record_call({CallKind::HostBarrier, 0, 0, 0, 0, 0});
}

HostGroup* Engine::create_group(int32_t color, int32_t key) {
  if (color < 0 && color != STRATA_COMM_SPLIT_NONE) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT, "strata_group_create: color " +
                                                 std::to_string(color) +
                                                 " must be >= 0 or STRATA_COMM_SPLIT_NONE (-1)");
  }
  if ((comm_caps_.features & STRATA_COMM_FEATURE_SPLIT) == 0) {
    throw Error(STRATA_ERR_UNSUPPORTED,
                "strata_group_create: the comm stratum (" + comm_.label() +
                    ") makes no sub-groups of ranks (its ops table has no split, ABI 1.10)");
  }
  if ((comm_caps_.device_mask & STRATA_DEVICE_BIT(STRATA_DEVICE_HOST)) == 0) {
    throw Error(STRATA_ERR_UNSUPPORTED,
                "strata_group_create: the comm stratum (" + comm_.label() +
                    ") moves device memory only, and a group's collectives take host buffers");
  }
  void* child = nullptr;
  try {
    child = sdk::Comm(tracked_comm_->ops(), tracked_comm_->self()).split(color, key);
  } catch (const sdk::Error& e) {
    throw Error(e.code(), comm_.label() + ": " + e.what());
  }
  if (child == nullptr) return nullptr;
  std::unique_ptr<HostGroup> group;
  try {
    groups_.reserve(groups_.size() + 1);
    group = std::make_unique<HostGroup>(*tracked_comm_->ops(), child, comm_.label());
  } catch (const std::bad_alloc&) {
    tracked_comm_->ops()->destroy(child);
    throw;
  }
  groups_.push_back(std::move(group));
  return groups_.back().get();
}

void Engine::destroy_group(HostGroup* group) {
  const auto it = std::find_if(groups_.begin(), groups_.end(),
                               [&](const auto& g) { return g.get() == group; });
  if (it == groups_.end()) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                "strata_group_destroy: not a live group of this runtime (destroyed already?)");
  }
  groups_.erase(it);
}

void Engine::replay_host_call(const RecordedCall& call) {
  switch (call.kind) {
    case CallKind::HostAllreduce: {
      const int32_t op = call.op == STRATA_AVG ? STRATA_SUM : call.op;
      const std::vector<unsigned char> mine = identity_of(op, call.dtype, call.count);
      std::vector<unsigned char> result(mine.size());
      collectives_->allreduce(mine.data(), result.data(), call.count, call.dtype, op);
      if (call.op == STRATA_AVG) {  // and not one of the contributors
        const int64_t zero = 0;
        int64_t contributors = 0;
        collectives_->allreduce(&zero, &contributors, 1, STRATA_I64, STRATA_SUM);
      }
      break;
    }
    case CallKind::HostAllgather: {
      const std::vector<unsigned char> mine(call.count * sdk::dtype_size(call.dtype), 0);
      std::vector<unsigned char> all(mine.size() * static_cast<size_t>(world_.size));
      collectives_->allgather(mine.data(), all.data(), call.count, call.dtype);
      break;
    }
    case CallKind::HostBarrier: collectives_->barrier(); break;
    default: break;
  }
}

}  // namespace strata::rt
