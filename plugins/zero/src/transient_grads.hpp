// Stage 1's gradient partition: fp32, transient (created by the step's first reduction, or by
// owned_shards, freed by zero_grad), fed at the boundary from the whole gradients every rank
// keeps (host buffers, or FullGrads'). The reducer reads the whole gradients through fill() and
// adds this rank's averaged slice through deliver().
#pragma once

#include "device_memory.hpp"
#include "dtype_cast.hpp"
#include "param.hpp"
#include "partition_layout.hpp"
#include "partition_reducer.hpp"

#include <strata/plugin.hpp>

#include <vector>

namespace strata::zero {

class TransientGrads final : public ReduceTarget {
 public:
  TransientGrads() = default;
  // `layout` and `params` must outlive this object.
  TransientGrads(const sdk::Host& host, const Caster& caster, const PartitionLayout& layout,
                 const std::vector<ParamRecord>& params, int32_t dtype)
      : host_(host), caster_(caster), layout_(&layout), params_(&params), dtype_(dtype) {}

  // The partition, created (zeroed) if there is none.
  float* fp32();
  void drop() { partition_ = Buffer<float>(); }

  void fill(size_t bucket, uint64_t first, uint64_t count, float* out) override;
  void deliver(size_t bucket, uint64_t offset, uint64_t count, const float* values) override;

 private:
  sdk::Host host_;
  Caster caster_{host_};
  const PartitionLayout* layout_ = nullptr;
  const std::vector<ParamRecord>* params_ = nullptr;
  int32_t dtype_ = STRATA_F32;
  Buffer<float> partition_;  // STRATA_MEM_GRADS
};

}  // namespace strata::zero
