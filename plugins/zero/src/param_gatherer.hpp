// Stage 3: parameters of partitioned buckets live only as each rank's slice (the parameter
// partition, model dtype, STRATA_MEM_PARAMS). An fp32 model's slices are the fp32 masters
// themselves (the master partition holds the same values, so a second copy would only double the
// memory and cost a copy per publish): no parameter partition is allocated then. gather(g) allgathers the buckets of group g into
// whole buffers (N*S elements each, STRATA_MEM_PARAMS) that the host reads through param_view;
// release(g) frees them.
//
// Prefetch: the groups gathered during the last whole step (boundary to boundary) form a trace.
// While this step's gathers follow it, each gather starts non-blocking allgathers of the next
// groups of the trace, up to stage3_prefetch_bucket_size elements in flight; a group still
// gathered stops the look-ahead until it is released.
//
// Retention (DeepSpeed's stage3_max_reuse_distance): release(g) keeps g's buffers cached when the
// trace says g is gathered again within max_reuse_distance gathered elements; the next gather of
// g is then served from them without communication. A cached group is released for the host
// (param_view says NULL). Parameters change only at the step, and every cached group is dropped at
// the end of each micro-batch, so a cached buffer always holds what a new allgather would bring.
//
// stage3_max_live_parameters bounds what is kept ahead or behind: prefetching and retention stay
// within it. A gather the model asks for always happens: over the limit it first drops prefetched,
// then cached groups, and then gathers anyway (as DeepSpeed does).
// Every rank sees the same calls (the sequence check), so these decisions match across ranks.
// Element counts here are of the gathered buffers (padding included): what the memory holds.
//
// Gathered buffers come from the SpareBuffers the lent gradients own (reused, not unmapped, within
// the peak of what both have in use; the stage frees the spares) and are not zeroed: the
// allgather writes them whole.
//
// offload_param (param_store.hpp): in host memory the slices are the store's bytes. On a drive a
// fetch first reads the rank's slices into staging buffers; its allgathers start once the reads
// are in, which for a prefetched group is at the next gather call (every rank lands prefetched
// reads at the same calls, so the collectives start in the same order everywhere). The read-ahead
// is also bounded by the store's read_ahead_elements. With an f16/bf16 model the step writes its
// model copies into a whole staged partition (stage_partition), written back by unstage.
#pragma once

#include "device_memory.hpp"
#include "comm_link.hpp"
#include "config.hpp"
#include "group_state.hpp"
#include "param.hpp"
#include "param_store.hpp"
#include "partition_layout.hpp"
#include "spare_buffers.hpp"

#include <strata/plugin.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace strata::zero {

class ParamGatherer {
 public:
  // `masters`: the fp32 master partition (laid out as `layout` says), which an fp32 model's
  // slices point into; ignored for f16/bf16 models, whose slices get their own partition (or
  // the store's first bytes). `store` (inactive without offload_param) and `masters_at` (the
  // byte offset of the masters in it) outlive this object; on a drive, an fp32 model's slices
  // are read from the masters there.
  ParamGatherer(const sdk::Host& host, CommLink& comm, const PartitionLayout& layout,
                const std::vector<ParamRecord>& params, const GroupState& groups, int32_t dtype,
                const ZeroConfig& config, float* masters, const ParamStore& store,
                uint64_t masters_at, std::shared_ptr<SpareBuffers> spares);
  ~ParamGatherer();
  ParamGatherer(const ParamGatherer&) = delete;
  ParamGatherer& operator=(const ParamGatherer&) = delete;

  // This rank's slice of partitioned bucket b in the parameter partition (fp32: in the masters;
  // on a drive: in the staged partition, nullptr when none is staged).
  void* slice(size_t b) const;
  // On a drive with an f16/bf16 model: a whole parameter partition in memory, read from the
  // store (for the step's model copies), and its write-back. No-ops otherwise.
  void stage_partition();
  void unstage_partition();
  // Copies this rank's slices out of the parameters' `data` (at finalize; fp32: the masters
  // were filled from there already).
  void fill_from_params();

  // After the sequence check and GroupState's bookkeeping. Collective. `in_trace`: the gather
  // is part of the step's pattern (prefetch follows it); false for writes (deferred values).
  void gather(uint32_t group, bool in_trace = true);
  void release(uint32_t group);
  // Drops prefetched groups nobody gathered and cached ones; at a boundary the step's gathers
  // become the trace.
  void end_micro_batch(bool boundary);
  // The partition is about to change (publish): cached buffers would be stale.
  void drop_cached() { drop_all(State::kCached); }

  // Bytes a gather of `group` allgathers (padding included); 0 for a group with nothing
  // partitioned.
  uint64_t gathered_bytes(uint32_t group) const {
    return group < elements_of_.size() ? elements_of_[group] * sdk::dtype_size(dtype_) : 0;
  }

  // Gathered partitioned bucket b (its group is gathered): this rank's slice within the whole
  // buffer, and writing such a slice into the parameter partition (f16/bf16 models: memory or
  // store; fp32 models keep their slices in the masters, MasterPartition::write_slice).
  const void* my_gathered_slice(size_t b) const;
  void write_slice(size_t b, const void* values);

  bool partitioned(uint32_t param) const;
  // Where the host reads partitioned parameter `param`, or nullptr if its group is not gathered.
  void* data(uint32_t param) const;

 private:
  struct Fetch {
    size_t bucket = 0;
    Buffer<unsigned char> buffer;
    strata_request request = nullptr;
    Buffer<unsigned char> staged;  // on a drive: the rank's slice, read from the store
    uint64_t read = 0;             // its read's ticket while in flight
  };
  enum class State {
    kGathered,    // between the host's gather and release
    kPrefetched,  // started ahead of its gather, not gathered yet
    kCached,      // released by the host, kept for a gather soon (retention)
  };
  struct Live {
    std::vector<Fetch> fetches;
    State state = State::kGathered;
  };

  // The whole gathered buffer of partitioned bucket b, or nullptr when its group is not
  // gathered (prefetched and cached groups are not, for the host).
  unsigned char* gathered(size_t b) const;
  Live fetch(uint32_t group);  // starts the allgathers (on a drive: the reads)
  void complete(Live& live);   // waits for them
  void land(Fetch& f);         // a read in: waits for it and starts the allgather
  void land_prefetched();      // lands every prefetched group's reads
  uint64_t store_offset(size_t b) const;  // of bucket b's slice in the store, bytes
  void drop(uint32_t group);
  void drop_all(State state);
  void prefetch_ahead();
  // Whether the trace gathers `group` again within max_reuse_distance gathered elements.
  bool reused_soon(uint32_t group) const;
  uint64_t live_elements() const;
  uint64_t elements_in(State state) const;

  sdk::Host host_;
  CommLink& comm_;
  const PartitionLayout& layout_;
  const std::vector<ParamRecord>& params_;
  const GroupState& groups_;
  int32_t dtype_;
  uint64_t prefetch_limit_, live_limit_, reuse_distance_;
  float* masters_;                    // fp32 models: the slices live here
  const ParamStore& store_;
  uint64_t masters_at_;
  Buffer<unsigned char> partition_;  // f16/bf16 models: model dtype (on a drive: staged)
  std::shared_ptr<SpareBuffers> spares_;  // shared with the lent gradients
  std::vector<std::vector<size_t>> buckets_of_;  // per group: its partitioned buckets
  std::vector<uint64_t> elements_of_;            // per group: N*S summed over those
  std::vector<uint64_t> slot_offset_;            // per parameter, within its bucket
  std::map<uint32_t, Live> live_;
  std::vector<uint32_t> trace_, last_trace_;
  bool following_ = true;  // this step's gathers so far repeat last_trace_
  size_t cursor_ = 0;      // next position of last_trace_ to consider prefetching
};

}  // namespace strata::zero
