// Stages 2-3: gradient buffers lent to the host for parameters registered with grad = NULL.
//
// gather(g, FOR_BACKWARD) lends zeroed buffers for g's parameters; the host accumulates one
// micro-batch's gradient into them; the bucket's reduction reads them; then they are given back
// (SpareBuffers: reused within their peak, freed at the end of the micro-batch), so that no rank
// keeps whole gradients beyond a bucket in flight. With contiguous_gradients a lent
// buffer is the parameter's slot in a model-dtype buffer of the whole bucket (N*S elements,
// padding zeroed), which the reduction can send without a copy when the model dtype is fp32;
// otherwise each parameter gets a buffer of its own. A buffer lives until both the host's view of
// it has ended (release) and the reduction no longer needs it (consumed). Accounted
// STRATA_MEM_GRADS.
#pragma once

#include "device_memory.hpp"
#include "param.hpp"
#include "partition_layout.hpp"
#include "spare_buffers.hpp"

#include <strata/plugin.hpp>

#include <memory>
#include <vector>

namespace strata::zero {

class LentGrads {
 public:
  LentGrads() = default;
  LentGrads(const sdk::Host& host, const PartitionLayout& layout,
            const std::vector<ParamRecord>& params, int32_t dtype, bool contiguous);

  // The spare buffers, for another owner whose buffers are in use at the same time to share.
  const std::shared_ptr<SpareBuffers>& spares() const { return spares_; }

  // Lends zeroed buffers to the parameters among `params` registered without a gradient.
  void lend(const std::vector<uint32_t>& params);
  // The host's view of these parameters' buffers has ended.
  void unlend(const std::vector<uint32_t>& params);
  // The buffer the host writes parameter p's gradient into, or nullptr if none is lent now.
  void* view(uint32_t p) const;
  // Where parameter p's lent gradient lies this micro-batch (lent now or earlier, not yet
  // consumed), or nullptr: it contributes zeros.
  const void* source(uint32_t p) const;
  // The whole-bucket buffer of bucket b if one exists (contiguous_gradients), else nullptr.
  void* bucket_buffer(size_t b) const { return buckets_[b].buffer.data(); }
  // Bucket b's reduction no longer reads its lent buffers.
  void consumed(size_t b);
  // A new micro-batch: forgets what was consumed and frees the spare buffers. Buffers still
  // viewed stay.
  void new_round();

 private:
  struct BucketState {
    Buffer<unsigned char> buffer;  // contiguous_gradients: the whole bucket
    size_t viewers = 0;                    // its parameters lent now
    bool consumed = false;
  };
  void maybe_free(size_t b);

  const PartitionLayout* layout_ = nullptr;
  const std::vector<ParamRecord>* params_ = nullptr;
  int32_t dtype_ = STRATA_F32;
  bool contiguous_ = true;
  std::shared_ptr<SpareBuffers> spares_;
  std::vector<BucketState> buckets_;
  std::vector<Buffer<unsigned char>> own_;  // per parameter, without contiguous_gradients
  std::vector<uint8_t> lent_;                        // per parameter: viewed now
  std::vector<uint64_t> slot_offset_;                // per parameter, within its bucket
};

}  // namespace strata::zero
