// Plugins built with a 1.0-1.2 plugin_api.h: their ops tables have no strata_ops_header, create
// takes (config_json, host), and collectives and sharding calls take positional arguments. The
// runtime loads them through this adapter and then treats them like any current plugin:
//
//   if (legacy::is_legacy(d)) {
//     legacy::check_table(d, kind, at);                    // instead of the 1.3 table checks
//     Ops ops = legacy::adapter_ops_for<Ops>(d);           // store it; call through it
//     legacy::create(d, &args, &self, &err);               // instead of ops.create
//     ... ops.fn(self, ...) ... ops.destroy(self);
//   }
//
// adapter_ops_for<Ops>(d) is the table the runtime should use: it is adapter_ops<Ops>() with the
// functions this plugin lacks set to NULL (comm: allgatherv, reduce_scatter, wait, test where the
// legacy table has NULL; sharding: the five group functions when the table is 1.0-sized or has them
// NULL), so the runtime's "Optional, NULL means not supported" rules apply to legacy plugins as to
// current ones. adapter_ops<Ops>() has every function present; an absent one called through it
// fails with STRATA_ERR_UNSUPPORTED naming the function.
//
// What the adapter does besides renaming arguments:
//  - The host table a legacy plugin gets is today's (same layout, it only grew at the end) cut to
//    ABI 1.2's size and saying runtime_minor 2, so the plugin behaves as under a 1.2 runtime. Its
//    comm and precision point to 1.2-layout tables that forward to the current ones (a legacy comm
//    plugin itself gets neither, as every comm plugin).
//  - Shard arrays cross in the layout of the plugin's header: 1.0 and 1.1 plugins (descriptor
//    minor 0, 1) see a strata_shard without `model`/`model_dtype`, so arrays are copied to
//    that stride on the way in (offload init_state/step, precision grad_stats) and to today's on
//    the way out (sharding owned_shards, with model NULL: no copies asked for). The copies hold
//    the same master/grad pointers, so updates land where they should.
//  - 1.2 semantics are kept as they were: a legacy sharding plugin that set shard.model expects the
//    runtime or offload to make the copies (the runtime does); one that did not rounds its masters
//    in publish through host->precision, which the 1.2 precision table forwards.
//  - Nothing but C crosses: the forwarding functions catch every exception.
#pragma once

#include <strata/plugin_api.h>

#include <cstdint>
#include <string>

namespace strata::rt::legacy {

// 1.0-1.2 plugins: descriptor min_runtime_minor < STRATA_ABI_MINOR_TABLES.
bool is_legacy(const strata_plugin_descriptor& d);

// Checks a legacy ops table (size >= 1.0's for the kind, 1.0 functions non-NULL; 1.1 group
// functions all-or-none). Throws strata::rt::Error(STRATA_ERR_ABI, at + ": ...") naming what is
// wrong. `d` must be legacy and of `kind` (the loader's descriptor checks come first).
void check_table(const strata_plugin_descriptor& d, int32_t kind, const std::string& at);

// Current-layout table forwarding to instances made by legacy::create (its own create member is
// never called by the runtime; it fails with a message if it is). Every function is present.
template <class Ops>
const Ops& adapter_ops();
template <> const strata_comm_ops& adapter_ops<strata_comm_ops>();
template <> const strata_sharding_ops& adapter_ops<strata_sharding_ops>();
template <> const strata_precision_ops& adapter_ops<strata_precision_ops>();
template <> const strata_offload_ops& adapter_ops<strata_offload_ops>();

// What the runtime should use: adapter_ops<Ops>() with NULL where this legacy plugin (already
// checked with check_table) lacks the function. Returned by value; the runtime stores it.
template <class Ops>
Ops adapter_ops_for(const strata_plugin_descriptor& d);
template <> strata_comm_ops adapter_ops_for<strata_comm_ops>(const strata_plugin_descriptor& d);
template <> strata_sharding_ops adapter_ops_for<strata_sharding_ops>(const strata_plugin_descriptor& d);
template <> strata_precision_ops adapter_ops_for<strata_precision_ops>(const strata_plugin_descriptor& d);
template <> strata_offload_ops adapter_ops_for<strata_offload_ops>(const strata_plugin_descriptor& d);

// Creates a legacy plugin instance: builds a 1.2-layout host table from args->host (its comm and
// precision wrapped as 1.2-layout tables forwarding to the current ones), calls the legacy create;
// *self is a wrapper {legacy ops table, legacy self, the legacy host table it owns} that
// adapter_ops<Ops>() accepts; destroy frees it after calling the legacy destroy. On failure *self
// is NULL and *err holds the plugin's message. The table args->host is copied (cut to 1.2), but
// what it points to (host_ctx, the comm and precision tables and instances) must outlive the
// instance, as for every plugin.
strata_status create(const strata_plugin_descriptor& d, const strata_plugin_create_args* args,
                     void** self, strata_error* err);

}  // namespace strata::rt::legacy
