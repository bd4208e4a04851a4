#include "master_partition.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

namespace strata::zero {

MasterPartition::MasterPartition(const sdk::Host& host, const Caster& caster,
                                 const PartitionLayout& layout,
                                 const std::vector<ParamRecord>& params, int32_t dtype,
                                 bool in_params, float* storage)
    : layout_(&layout), dtype_(dtype), host_(host), storage_(storage),
      ranges_(layout.owned_ranges()) {
  if (in_params) {
    if (dtype != STRATA_F32) {
      sdk::fail(STRATA_ERR_INTERNAL, "masters in the parameters need an fp32 model");
    }
    for (const OwnedRange& r : ranges_) {
      add_shard(r, static_cast<float*>(params[r.param_index].data) + r.param_offset);
    }
    return;
  }
  if (storage_ == nullptr) {
    master_ = Buffer<float>(host, layout.partition_elements(), STRATA_MEM_MASTER);
  }
  for (size_t b = 0; b < layout.buckets().size(); ++b) {
    fill_slice(caster, params, b, data() + layout.bucket(b).offset);
  }
  for (const OwnedRange& r : ranges_) add_shard(r, data() + r.partition_offset);
}

MasterPartition::MasterPartition(const sdk::Host& host, const Caster& caster,
                                 const PartitionLayout& layout,
                                 const std::vector<ParamRecord>& params, int32_t dtype,
                                 const ParamStore& store, uint64_t offset)
    : layout_(&layout), dtype_(dtype), host_(host), ranges_(layout.owned_ranges()) {
  Buffer<float> staging(host, layout.max_slice(), STRATA_MEM_MASTER);
  for (size_t b = 0; b < layout.buckets().size(); ++b) {
    const BucketPartition& part = layout.bucket(b);
    std::fill_n(staging.data(), part.slice, 0.0f);  // the padding is zero, as in memory
    fill_slice(caster, params, b, staging.data());
    store.write(offset + part.offset * sizeof(float), staging.data(), part.slice * sizeof(float));
  }
  for (const OwnedRange& r : ranges_) add_shard(r, nullptr);
}

void MasterPartition::fill_slice(const Caster& caster, const std::vector<ParamRecord>& params,
                                 size_t b, float* slice) const {
  const uint64_t begin = layout_->my_begin(b);
  layout_->for_each_piece(b, begin, layout_->bucket(b).slice,
                          [&](const BucketSlot& slot, uint64_t param_offset, uint64_t flat,
                              uint64_t n) {
                            const ParamRecord& p = params[slot.param_index];
                            if (p.data == nullptr) {  // deferred values start at zero
                              std::fill_n(slice + (flat - begin), n, 0.0f);
                              return;
                            }
                            caster.convert(element_at(p.data, dtype_, param_offset), dtype_,
                                           slice + (flat - begin), STRATA_F32, n);
                          });
}

void MasterPartition::write_slice(size_t b, const float* values, const ParamStore& store,
                                  uint64_t offset) {
  const BucketPartition& part = layout_->bucket(b);
  if (data() != nullptr) {
    Memory(host_).copy(data() + part.offset, values, part.slice * sizeof(float));
  } else {
    store.write(offset + part.offset * sizeof(float), values, part.slice * sizeof(float));
  }
}

void MasterPartition::point_shards() {
  for (size_t i = 0; i < shards_.size(); ++i) {
    shards_[i].master = data() == nullptr ? nullptr : data() + ranges_[i].partition_offset;
  }
}

void MasterPartition::page_in(const ParamStore& store, uint64_t offset) {
  if (resident()) return;
  if (store.mapping() != nullptr) {
    // In place, through the store's mapping: the step walks the masters front to back, so the
    // kernel reads ahead, and what it has stepped past can be written back and reclaimed.
    storage_ = reinterpret_cast<float*>(store.mapping() + offset);
    mapped_ = true;
    advise_mapped(MADV_SEQUENTIAL);
  } else {
    master_ = Buffer<float>(host_, layout_->partition_elements(), STRATA_MEM_MASTER);
    store.read(offset, master_.data(), master_.size() * sizeof(float));
  }
  point_shards();
}

void MasterPartition::page_out(const ParamStore& store, uint64_t offset) {
  if (mapped_) {
    // The pages leave this process; their changes stay in the page cache, bound for the file.
    advise_mapped(MADV_DONTNEED);
    storage_ = nullptr;
    mapped_ = false;
  } else if (master_.data() != nullptr) {
    store.write(offset, master_.data(), master_.size() * sizeof(float));
    master_ = Buffer<float>();
  }
  point_shards();
}

void MasterPartition::advise_mapped(int advice) const {
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(storage_) / page * page;
  const auto end = reinterpret_cast<uintptr_t>(storage_ + layout_->partition_elements());
  // madvise, not posix_madvise: glibc makes POSIX_MADV_DONTNEED a no-op.
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, advice);
}

void MasterPartition::add_shard(const OwnedRange& r, float* master) {
  strata_shard shard{};
  shard.struct_size = sizeof(shard);
  shard.param_index = r.param_index;
  shard.offset = r.param_offset;
  shard.count = r.count;
  shard.master = master;
  shards_.push_back(shard);
}

size_t MasterPartition::request_model_copies(
    const std::vector<ParamRecord>& params,
    const std::function<void*(size_t bucket)>& partition_slice) {
  if (dtype_ == STRATA_F32) return 0;  // the masters are the model's values already
  for (size_t i = 0; i < shards_.size(); ++i) {
    const OwnedRange& r = ranges_[i];
    const size_t b = layout_->plan().bucket_of[r.param_index];
    const BucketPartition& part = layout_->bucket(b);
    void* slice = part.partitioned && partition_slice ? partition_slice(b) : nullptr;
    shards_[i].model =
        part.partitioned && partition_slice
            ? (slice == nullptr ? nullptr
                                : element_at(slice, dtype_, r.partition_offset - part.offset))
            : element_at(params[r.param_index].data, dtype_, r.param_offset);
    shards_[i].model_dtype = dtype_;
  }
  return shards_.size();
}

const std::vector<strata_shard>& MasterPartition::ranges() {
  ranges_only_ = shards_;
  for (strata_shard& s : ranges_only_) {
    s.master = nullptr;
    s.grad = nullptr;
    s.model = nullptr;
  }
  return ranges_only_;
}

const std::vector<strata_shard>& MasterPartition::shards_with_grads(float* grads) {
  for (size_t i = 0; i < shards_.size(); ++i) shards_[i].grad = grads + ranges_[i].partition_offset;
  return shards_;
}

}  // namespace strata::zero
