// allreduce and reduce_scatter: the collectives that do arithmetic, and the guard every work item
// runs in.
#include "collectives.hpp"
#include "direct_allreduce.hpp"
#include "dtypes.hpp"
#include "errors.hpp"
#include "ring_reduce_scatter.hpp"

#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/reduce.h>

#include <cstring>

namespace strata::allreduce_gloo {

namespace {

// `out` = the `count` elements at `offset` bytes of every frame's payload, reduced by `fn` in rank
// order: the same on every rank. Nothing when `count` is 0 (`out` may then be null).
void reduce_frames(const std::vector<Frame>& frames, size_t offset, size_t count,
                   size_t element_size, const ReduceFn& fn, void* out) {
  if (count == 0) return;
  std::memcpy(out, frames[0].payload + offset, count * element_size);
  for (size_t r = 1; r < frames.size(); ++r) fn(out, out, frames[r].payload + offset, count);
}

}  // namespace

void Collectives::throw_if_failed(const char* call) const {
  std::lock_guard lock(failure_.mutex);
  if (failure_.message.empty()) return;
  // The failure may have been on Gloo's pairs or in the host's shared-memory group (two levels):
  // either leaves the instance's collectives unusable.
  sdk::fail(STRATA_ERR_COMM, std::string(call) + ": an earlier collective failed, and this " +
                                 "communicator cannot be used after that (" + failure_.message +
                                 ")");
}

void Collectives::latching(const std::function<void()>& exchange) const {
  try {
    exchange();
  } catch (const sdk::Error& e) {
    if (e.code() != STRATA_ERR_COMM) throw;
    const std::string who = comm_.ranks_at(e.what());
    const std::string message = e.what() + (who.empty() ? "" : " (" + who + ")");
    {
      std::lock_guard lock(failure_.mutex);
      if (failure_.message.empty()) failure_.message = message;
    }
    sdk::fail(STRATA_ERR_COMM, message);
  }
}

std::function<void()> Collectives::guarded(const char* call, const char* span, uint64_t bytes,
                                           const CallHeader& header, std::function<void()> body,
                                           Fold fold) const {
  return [this, call, span, bytes, header, body = std::move(body), fold = std::move(fold)] {
    const int64_t begin = tracer_.now();
    throw_if_failed(call);
    latching([&] {
      translate(std::string("gloo ") + call, [&] {
        const std::vector<Frame> frames = agree(header, fold.data, fold.bytes);
        if (frames.empty()) return body();
        fold.reduce(frames);
      });
    });
    tracer_.span(span, begin, -1, bytes);
  };
}

void Collectives::flat_allreduce(const std::shared_ptr<gloo::Context>& context, void* data, size_t count,
                                 size_t element_size, const ReduceFn& fn) const {
  const Config::Algorithm algorithm = config_.algorithm_for(context->size, count * element_size);
  if (algorithm == Config::Algorithm::direct) {
    const sdk::comm::KeptScratch::Lease scratch =
        exchange_scratch_.lease(direct_allreduce_scratch_bytes(context->size, count, element_size));
    return direct_allreduce(*context, data, count, element_size, fn, scratch.data(),
                            config_.timeout);
  }
  gloo::AllreduceOptions options(context);
  set_output(options, data, count, element_size);
  options.setReduceFunction(fn);
  options.setAlgorithm(algorithm == Config::Algorithm::bcube
                           ? gloo::AllreduceOptions::Algorithm::BCUBE
                           : gloo::AllreduceOptions::Algorithm::RING);
  options.setTimeout(config_.timeout);
  gloo::allreduce(options);
}

// Hierarchical: in two levels where the hosts hold the same number of ranks and there is a host
// group (plugins/common/shm's two_level_allreduce, the cross-host step on comm_.cross()); otherwise
// reduce to each host's first rank, allreduce among those, broadcast within hosts. The broadcast
// makes the result bitwise the same on every rank; it equals the flat result up to the order of
// floating-point additions (integers exactly).
void Collectives::allreduce_into(const void* input, void* data, size_t count, int32_t dtype,
                                 int32_t op) const {
  if (count == 0) return;
  const size_t element_size = sdk::dtype_size(dtype);
  const ReduceFn fn = reduce_function(dtype, op);
  if (two_level()) {  // implies hierarchical_
    return common::shm::two_level_allreduce(
        *host_shm_, input, data, count,
        std::max<uint64_t>(1, config_.chunk_bytes / element_size), dtype, op,
        [&](void* block, uint64_t elements) {
          flat_allreduce(comm_.cross(), block, elements, element_size, fn);
        });
  }
  if (input != data) std::memcpy(data, input, count * element_size);
  if (comm_.size() == 1) return;
  if (!hierarchical_) return flat_allreduce(comm_.world(), data, count, element_size, fn);
  if (const auto& local = comm_.local()) {
    gloo::ReduceOptions reduce(local);
    set_output(reduce, data, count, element_size);
    reduce.setRoot(0);
    reduce.setReduceFunction(fn);
    reduce.setTimeout(config_.timeout);
    gloo::reduce(reduce);
  }
  // Only the hosts' first ranks hold their host's sum (even hosts give every local rank a cross
  // context, for the two-level form).
  if (const auto& cross = comm_.cross(); cross && comm_.local_rank() == 0) {
    flat_allreduce(cross, data, count, element_size, fn);
  }
  if (const auto& local = comm_.local()) {
    gloo::BroadcastOptions broadcast(local);
    set_output(broadcast, data, count, element_size);
    broadcast.setRoot(0);
    broadcast.setTimeout(config_.timeout);
    gloo::broadcast(broadcast);
  }
}

void Collectives::allreduce(const strata_buffer* send_arg, const strata_buffer* recv_arg,
                            int32_t op, Request& request) const {
  const char* call = "allreduce";
  const auto [send, recv] = check_pair(call, send_arg, recv_arg, kPluginName);
  check_count(call, "recv", recv.count, send.count, "send.count");
  check_op(call, op);
  check_in_place(call, send, recv, recv.at(0), "send.data == recv.data");
  if (use_shm(send.bytes())) {
    on_shm(request, "shm_allreduce", send.bytes(),
           [in = send.data, out = recv.data, count = send.count, dtype = send.dtype,
            op](common::shm::ShmGroup& group) {
             group.allreduce(in, out, count, dtype, op);
           });
    return;
  }
  const CallHeader header{STRATA_COLL_ALLREDUCE, send.dtype, op, -1, send.count, 0};
  const int32_t accumulate = accumulate_dtype(send.dtype);
  const int world = comm_.size();
  // The reduction reads `input` and leaves the result in `result` (allreduce_into).
  const void* input = send.data;
  void* result = recv.data;
  if (is_half(send.dtype)) {
    // Halves are reduced in f32 (widened once here, rounded once in finish), as allreduce-mpi does.
    request.scratch = Scratch(host_, send.count * sizeof(float));
    half_to_f32(send.dtype, send.data, request.scratch.floats(), send.count);
    result = request.scratch.data();
    input = result;
  }
  const size_t accumulate_size = sdk::dtype_size(accumulate);
  Fold fold{input, send.count * accumulate_size,
            [result, count = send.count, accumulate, accumulate_size,
             op](const std::vector<Frame>& frames) {
              reduce_frames(frames, 0, count, accumulate_size, reduce_function(accumulate, op),
                            result);
            }};
  request.work = guarded(call, "gloo_allreduce", send.bytes(), header,
                         [this, input, result, count = send.count, accumulate, op] {
    allreduce_into(input, result, count, accumulate, op);
  }, std::move(fold));
  if (op != STRATA_AVG && !is_half(send.dtype)) return;
  request.finish = [=, out = recv.data, dtype = send.dtype, count = send.count] {
    if (op == STRATA_AVG && world > 1) divide_in_place(result, count, accumulate, world);
    if (is_half(dtype)) f32_to_half(dtype, static_cast<const float*>(result), out, count);
  };
}

// Reduce-scatter over Gloo: a ring (ring_reduce_scatter.hpp) on a scratch copy of the send buffer,
// with one more block of scratch for the incoming one. With the two-level hierarchy (a host group
// and even hosts) it runs in two levels (plugins/common/shm's two_level_reduce_scatter): within
// the host through shared memory, then a ring among the same local rank's ranks on the cross
// context, which carries about 1/L of the bytes per rank over TCP where a flat ring carries
// (N - 1)/N of them. The two levels read the send buffer where it is and leave this rank's block
// in recv (halves: in their f32 widening), the ring's incoming block in the kept scratch.
void Collectives::reduce_scatter(const strata_buffer* send_arg, const strata_buffer* recv_arg,
                                 int32_t op, Request& request) const {
  const char* call = "reduce_scatter";
  const auto [send, recv] = check_pair(call, send_arg, recv_arg, kPluginName);
  const uint64_t expected = saturating_product(recv.count, comm_.size());
  check_count(call, "send", send.count, expected, "recv.count * size");
  check_op(call, op);
  check_in_place(call, send, recv, recv.at(0), "send.data == recv.data");
  if (use_shm(send.bytes())) {
    on_shm(request, "shm_reduce_scatter", send.bytes(),
           [in = send.data, out = recv.data, count = recv.count, dtype = send.dtype,
            op](common::shm::ShmGroup& group) {
             group.reduce_scatter(in, out, count, dtype, op);
           });
    return;
  }
  const CallHeader header{STRATA_COLL_REDUCE_SCATTER, send.dtype, op, -1, recv.count, 0};
  const int32_t accumulate = accumulate_dtype(send.dtype);
  const size_t accumulate_size = sdk::dtype_size(accumulate);
  const size_t mine_at = recv.count * static_cast<size_t>(comm_.rank()) * accumulate_size;
  // What the reduction reads, and where this rank's block of the result lands: the caller's
  // buffers in two levels; else a scratch copy of the input (the flat ring reduces in it, with
  // its incoming block after it), or halves' f32 widening, this rank's block in place there (in
  // two levels the ring's incoming block is in the kept scratch instead).
  const void* input = send.data;
  void* mine = recv.data;
  void* all = nullptr;
  if (is_half(send.dtype) || !two_level()) {
    const uint64_t incoming = two_level() ? 0 : recv.count;
    request.scratch = Scratch(host_, (send.count + incoming) * accumulate_size);
    all = request.scratch.data();
    if (is_half(send.dtype)) {
      half_to_f32(send.dtype, send.data, request.scratch.floats(), send.count);
    } else if (send.count > 0) {
      std::memcpy(all, send.data, send.bytes());
    }
    input = all;
    mine = static_cast<char*>(all) + mine_at;
  }
  Fold fold{input, send.count * accumulate_size,
            [mine, mine_at, block = recv.count, accumulate, accumulate_size,
             op](const std::vector<Frame>& frames) {
              reduce_frames(frames, mine_at, block, accumulate_size,
                            reduce_function(accumulate, op), mine);
            }};
  request.work = guarded(call, "gloo_reduce_scatter", send.bytes(), header,
                         [this, input, mine, all, count = send.count, block = recv.count,
                          accumulate, accumulate_size, op] {
    const ReduceFn fn = reduce_function(accumulate, op);
    if (two_level()) {
      // Across hosts: a ring in the slice, then this host's block (cross rank = host index).
      return common::shm::two_level_reduce_scatter(
          *host_shm_, round_scratch_, grid_, input, mine, block, config_.chunk_bytes, accumulate,
          op, [&](void* slice, void* out, uint64_t elements) {
            gloo::Context& cross = *comm_.cross();
            const sdk::comm::KeptScratch::Lease incoming =
                exchange_scratch_.lease(elements * accumulate_size);
            ring_reduce_scatter(cross, slice, incoming.data(), elements, accumulate_size, fn,
                                config_.timeout);
            std::memcpy(out, static_cast<char*>(slice) + elements * accumulate_size * cross.rank,
                        elements * accumulate_size);
          });
    }
    if (comm_.size() == 1) return;
    ring_reduce_scatter(*comm_.world(), all, static_cast<char*>(all) + count * accumulate_size,
                        block, accumulate_size, fn, config_.timeout);
  }, std::move(fold));
  const int world = comm_.size();
  request.finish = [=, out = recv.data, dtype = send.dtype, count = recv.count] {
    if (op == STRATA_AVG && world > 1) divide_in_place(mine, count, accumulate, world);
    if (is_half(dtype)) {
      f32_to_half(dtype, static_cast<const float*>(mine), out, count);
    } else if (mine != out && count > 0) {
      std::memcpy(out, mine, count * accumulate_size);
    }
  };
}

}  // namespace strata::allreduce_gloo
