// What the 1.0-1.2 adapter's files share (internal to runtime/src/legacy_abi): the error plumbing,
// the wrapper every adapted instance is, and reading legacy tables and shard arrays.
#pragma once

#include "legacy_api.hpp"

#include <strata/plugin.hpp>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace strata::rt::legacy {

// ---- errors: nothing but a status and a message crosses ------------------------------------

using sdk::fail;
using sdk::set_error;

// sdk::guard for a body that returns the status to pass on.
template <class Body>
strata_status guard(strata_error* err, Body&& body) noexcept {
  strata_status status = STRATA_OK;
  const strata_status thrown = sdk::guard(err, [&] { status = body(); });
  return thrown != STRATA_OK ? thrown : status;
}

// ---- the wrapper every adapted instance is ------------------------------------------------

// Self of a 1.2-layout table lent to a legacy plugin: the current instance it forwards to, and the
// minor of the plugin calling through it (the layout of the shard arrays it passes).
struct Link {
  const void* ops = nullptr;  // const strata_comm_ops* or const strata_precision_ops*
  void* self = nullptr;
  uint32_t caller_minor = 0;
};

struct Instance {
  int32_t kind = 0;
  uint32_t minor = 0;       // the descriptor's minor: before 1.3, the header it was built with
  const void* ops = nullptr;  // the legacy table (a v1_2::strata_*_ops prefix of struct_size bytes)
  size_t ops_size = 0;
  void* self = nullptr;     // the legacy instance

  // The host table the legacy plugin holds, and the 1.2-layout comm/precision tables it points to.
  v1_2::strata_host_api host{};
  v1_2::strata_comm_ops host_comm{};
  v1_2::strata_precision_ops host_precision{};
  Link comm_link;
  Link precision_link;

  // Shard arrays converted between strides; reused so pointers stay put while sizes do.
  std::vector<Shard1_0> shards_in;         // to a 1.0/1.1 offload or precision plugin
  std::vector<strata_shard> shards_out;    // from a 1.0/1.1 sharding plugin
  // Arrays owned_shards returned before shards_out, when a later owned_shards call gave other
  // shards: each stays valid until the next call other than owned_shards (as the header promises).
  std::vector<std::vector<strata_shard>> shards_out_earlier;
};

inline bool shards_are_1_0(uint32_t minor) { return minor < kShardModelMinor; }

template <class Table>
const Table& legacy_table(const Instance& in) {
  return *static_cast<const Table*>(in.ops);
}

// Is the field at `offset` (a function pointer) inside a table of `size` bytes?
constexpr bool has_field(size_t size, size_t offset) { return size >= offset + sizeof(void*); }

// Today's shard -> a 1.0/1.1 plugin's (the same master/grad pointers).
inline Shard1_0 shard_1_0(const strata_shard& s) {
  const v1_2::strata_shard fields{kShardSize1_0, s.param_index, s.offset, s.count, s.master, s.grad,
                                  nullptr, 0};
  Shard1_0 out;
  std::memcpy(out.bytes, &fields, sizeof out.bytes);
  return out;
}

// A 1.0/1.1 caller's shard array (its stride) -> today's layout (model NULL: no copies asked for).
inline std::vector<strata_shard> shards_from_1_0(const v1_2::strata_shard* shards, size_t count) {
  const auto* old = reinterpret_cast<const Shard1_0*>(shards);
  std::vector<strata_shard> out(count);
  for (size_t i = 0; i < count; ++i) {
    v1_2::strata_shard s{};
    std::memcpy(&s, old[i].bytes, sizeof old[i].bytes);
    out[i] = strata_shard{sizeof(strata_shard), s.param_index, s.offset, s.count, s.master, s.grad,
                          nullptr, STRATA_F32};
  }
  return out;
}

// The 1.1 group functions, all five inside the table and non-NULL (check_table refused a table
// with some of them only).
inline bool sharding_has_groups(const v1_2::strata_sharding_ops& t, size_t size) {
  return size >= kShardingSize1_1 && t.define_group != nullptr && t.gather != nullptr &&
         t.release != nullptr && t.param_view != nullptr && t.end_micro_step != nullptr;
}

// create and destroy of a legacy table: the same two fields after struct_size in every kind's.
using create_fn = decltype(v1_2::strata_comm_ops::create);
using destroy_fn = decltype(v1_2::strata_comm_ops::destroy);
struct Lifecycle {
  create_fn create = nullptr;
  destroy_fn destroy = nullptr;
};
inline Lifecycle lifecycle(int32_t kind, const void* ops) {
  auto of = [&](const auto* t) { return Lifecycle{t->create, t->destroy}; };
  switch (kind) {
    case STRATA_PLUGIN_COMM: return of(static_cast<const v1_2::strata_comm_ops*>(ops));
    case STRATA_PLUGIN_SHARDING: return of(static_cast<const v1_2::strata_sharding_ops*>(ops));
    case STRATA_PLUGIN_PRECISION: return of(static_cast<const v1_2::strata_precision_ops*>(ops));
    case STRATA_PLUGIN_OFFLOAD: return of(static_cast<const v1_2::strata_offload_ops*>(ops));
    default: return {};
  }
}

// The struct_size a legacy table starts with (checked against the kind's 1.0 size at load).
inline size_t table_size(const strata_plugin_descriptor& d) { return *static_cast<const size_t*>(d.ops); }

}  // namespace strata::rt::legacy
