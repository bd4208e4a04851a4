// The engine's checkpoints (strata.h, API 1.6; docs/DESIGN.md, "Checkpoints").
#include "checkpoint/checkpoint_files.hpp"
#include "checkpoint/checkpoint_loader.hpp"
#include "checkpoint/checkpoint_state.hpp"
#include "engine/engine.hpp"
#include "engine/engine_calls.hpp"
#include "log.hpp"
#include "loader/runtime_abi.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

namespace strata::rt {
namespace {

using nlohmann::json;

// A plugin's save_state text as JSON, with the plugin's name; null when it has none.
template <class Ops>
json saved_plugin_state(const PluginInstance<Ops>& plugin) {
  if (plugin.ops().save_state == nullptr) return nullptr;
  std::string buffer(4096, '\0');
  size_t length = 0;
  plugin.call("save_state", &Ops::save_state, buffer.data(), buffer.size(), &length);
  if (length >= buffer.size()) {  // did not fit: the plugin said how long it is
    buffer.assign(length + 1, '\0');
    plugin.call("save_state", &Ops::save_state, buffer.data(), buffer.size(), &length);
    if (length >= buffer.size()) {
      throw Error(STRATA_ERR_INTERNAL, plugin.label() + ": save_state: its text grew between calls");
    }
  }
  buffer.resize(length);
  json state = json::parse(buffer, nullptr, false);
  if (state.is_discarded() || !state.is_object()) {
    throw Error(STRATA_ERR_INTERNAL, plugin.label() + ": save_state: expected a JSON object text");
  }
  return json{{"plugin", plugin.name()}, {"state", std::move(state)}};
}

// Gives a plugin back its saved state when the checkpoint has one of the same plugin; says so
// when it cannot.
template <class Ops>
void restore_plugin_state(const PluginInstance<Ops>& plugin, const json& saved, const char* why_not) {
  if (!saved.is_object() || plugin.ops().load_state == nullptr) return;
  const json name = saved.value("plugin", json());
  if (!name.is_string() || name.get<std::string>() != plugin.name() || why_not != nullptr) {
    logger().info("checkpoint: {} starts afresh ({})", plugin.label(),
                  why_not != nullptr ? why_not : "the checkpoint's state is another plugin's");
    return;
  }
  const std::string text = saved.value("state", json::object()).dump();
  try {
    plugin.call("load_state", &Ops::load_state, text.c_str());
  } catch (const Error& e) {
    // The job's configuration differs from the saved one (a static scale where it was dynamic):
    // the job's wins, as it would for any other setting it changed.
    if (e.code() != STRATA_ERR_MISMATCH) throw;
    logger().warn("checkpoint: {} starts afresh: {}", plugin.label(), e.what());
  }
}

std::string encode_ranges(const std::vector<SavedRange>& ranges) {
  std::ostringstream out;
  for (const SavedRange& r : ranges) out << r.range.param << ' ' << r.range.offset << ' ' << r.range.count << ' ';
  return out.str();
}

std::vector<ckpt::Range> decode_ranges(const std::string& text) {
  std::istringstream in(text);
  std::vector<ckpt::Range> out;
  ckpt::Range r;
  while (in >> r.param >> r.offset >> r.count) out.push_back(r);
  return out;
}

json read_extra(const std::string& text) {
  if (text.empty()) return json::object();
  json extra = json::parse(text, nullptr, false);
  if (extra.is_discarded() || !extra.is_object()) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                "save: extra_json: expected the text of a JSON object (the host's state), got '" +
                    text.substr(0, 80) + "'");
  }
  return extra;
}

uint64_t counter(const json& counters, const char* key, const std::string& path) {
  const json value = counters.value(key, json());
  if (!value.is_number_unsigned()) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                path + ": counters." + key + ": expected a non-negative integer");
  }
  return value.get<uint64_t>();
}

}  // namespace

// ---- saving ----

// ABI 1.8: the sharding plugin's shard_ranges (buffers NULL) where it has them and the offload
// plugin's table says its init_state reads only the ranges; otherwise the owned shards.
std::span<const strata_shard> Engine::init_shards() const {
  if (runtime_abi_minor() < 8 || sharding_.ops().shard_ranges == nullptr ||
      offload_.ops().header.built_minor < 8) {
    return owned_shards();
  }
  const strata_shard* shards = nullptr;
  size_t count = 0;
  sharding_.call("shard_ranges", &strata_sharding_ops::shard_ranges, &shards, &count);
  return {shards, count};
}

std::span<const strata_shard> Engine::owned_shards() const {
  const strata_shard* shards = nullptr;
  size_t count = 0;
  sharding_.call("owned_shards", &strata_sharding_ops::owned_shards, &shards, &count);
  return {shards, count};
}

void Engine::save(const SaveRequest& request) {
  require_finalized("save");
  if (request.dir.empty()) throw Error(STRATA_ERR_INVALID_ARGUMENT, "save: dir is empty");
  if (!at_accumulation_boundary()) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                "save: called in the middle of an accumulation (micro-step " +
                    std::to_string(micro_steps_ % batch_.gradient_accumulation_steps) + " of " +
                    std::to_string(batch_.gradient_accumulation_steps) +
                    "); save after the step that ends it");
  }
  const std::string tag =
      request.tag.empty() ? "global_step" + std::to_string(global_steps_) : request.tag;
  check_checkpoint_tag(tag, "save");
  if (!request.automatic) refuse_while_joined("save");  // the checkpoint block's: every rank's
  // The whole call on the timeline and in the step split (its copy is the step's pause).
  const WorkScope scope =
      WorkScope::call(step_time_, timeline_.get(), "strata_save", -1, TimePart::RuntimeOther);
  wait_for_save();
  activity_.enter_call(ApiCall::Save);
  try {
    start_save(request.dir, tag, request.extra_json);
  } catch (...) {
    activity_.leave_call();
    throw;
  }
  activity_.leave_call();
  if (request.blocking) wait_for_save();
}

void Engine::start_save(const std::string& dir, const std::string& tag,
                        const std::string& extra_text) {
  const std::span<const strata_shard> shards = owned_shards();
  const std::vector<std::string> slots = checkpoint_slots(offload_, "save");
  const std::vector<SavedRange> ranges =
      saved_ranges(shards, sharding_caps_.shards_replicated != 0, world_.rank, world_.size);
  // Every rank's folder and tag (they must agree) and ranges (rank 0 writes them all down).
  const std::vector<std::string> everyone =
      collectives_->allgather_strings(dir + '\n' + tag + '\n' + encode_ranges(ranges));
  std::string metadata;
  // Local work only, then every rank learns whether any failed: rank 0's folder is ready before
  // any rank writes into it, and a failure leaves no rank waiting.
  run_agreed("saving a checkpoint", [&] {
    const std::string mine = dir + '\n' + tag + '\n';
    for (size_t r = 0; r < everyone.size(); ++r) {
      if (everyone[r].compare(0, mine.size(), mine) != 0) {
        throw Error(STRATA_ERR_MISMATCH,
                    "save: rank " + std::to_string(world_.rank) + " saves to " +
                        checkpoint_dir(dir, tag) + ", rank " + std::to_string(r) +
                        " to another folder or tag: every rank must give the same dir and tag");
      }
    }
    const json extra = read_extra(extra_text);  // rank 0's is kept; every rank's must be valid
    if (world_.rank == 0) {
      ckpt::Metadata meta;
      meta.world_size = world_.size;
      meta.slots = slots;
      for (const ParamRecord& p : registry_.params()) {
        meta.params.push_back({p.name, p.count, strata_dtype_name(p.dtype)});
      }
      for (int r = 0; r < world_.size; ++r) {
        ckpt::RankInfo info;
        info.file = ckpt::shard_file_name(r);
        info.ranges = decode_ranges(everyone[static_cast<size_t>(r)].substr(mine.size()));
        info.data_bytes = ckpt::data_bytes(info.ranges, slots.size());
        meta.ranks.push_back(std::move(info));
      }
      meta.document = checkpoint_document(tag, extra);
      metadata = ckpt::metadata_text(meta);
      prepare_partial_dir(dir, tag);
    }
    size_t floats = 0;
    for (const SavedRange& r : ranges) floats += r.range.count * slots.size();
    float* snapshot = snapshot_for(floats);
    const WorkScope pause =
        WorkScope::phase(step_time_, timeline_.get(), "checkpoint_copy", TimePart::RuntimeOther);
    copy_state_out(shards, ranges, slots.size(), offload_, host_services_.device(), snapshot);
  });
  WriteJob job;
  job.partial_dir = partial_checkpoint_dir(dir, tag);
  job.rank = world_.rank;
  for (const SavedRange& r : ranges) job.ranges.push_back(r.range);
  job.slots = slots.size();
  job.data = snapshot_;
  job.metadata_text = std::move(metadata);
  pending_save_ = PendingSave{dir, tag, std::make_unique<CheckpointWriter>(std::move(job))};
}

json Engine::checkpoint_document(const std::string& tag, const json& extra) const {
  json doc;
  doc["strata_version"] = STRATA_VERSION_TEXT;
  doc["abi"] = std::to_string(STRATA_ABI_MAJOR) + "." + std::to_string(STRATA_ABI_MINOR);
  doc["api"] = std::to_string(STRATA_API_VERSION_MAJOR) + "." + std::to_string(STRATA_API_VERSION_MINOR);
  doc["tag"] = tag;
  doc["manifest"] = manifest_.json;
  doc["stage"] = sharding_caps_.stage;
  doc["model_dtype"] = strata_dtype_name(precision_caps_.model_dtype);
  doc["optimizer"] = offload_caps_.optimizer != nullptr ? offload_caps_.optimizer : "?";
  doc["plugins"] = {{"comm", comm_.name()}, {"sharding", sharding_.name()},
                    {"precision", precision_.name()}, {"offload", offload_.name()}};
  doc["counters"] = {{"global_steps", global_steps_},
                     {"applied_steps", applied_steps_},
                     {"skipped_steps", skipped_steps_},
                     {"consecutive_skips", consecutive_skips_}};
  doc["scheduler"] = {{"type", schedule_ ? json(schedule_->type()) : json()},
                      {"last_batch_iteration", schedule_iteration_},
                      {"lr_override", std::isnan(lr_override_) ? json() : json(lr_override_)}};
  doc["plugin_state"] = {{"precision", saved_plugin_state(precision_)},
                         {"offload", saved_plugin_state(offload_)}};
  doc["extra"] = extra;
  return doc;
}

void Engine::save_wait() {
  require_finalized("save_wait");
  refuse_while_joined("save_wait");
  const WorkScope scope =
      WorkScope::call(step_time_, timeline_.get(), "strata_save_wait", -1, TimePart::RuntimeOther);
  wait_for_save();
}

void Engine::wait_for_save() {
  guarded(ApiCall::Save, -1, [&] { finish_save(true); }, false);
  if (!save_failure_.empty()) {
    throw Error(STRATA_ERR_INTERNAL, std::exchange(save_failure_, std::string()));
  }
}

void Engine::finish_save(bool wait) {
  if (!pending_save_) return;
  CheckpointWriter& writer = *pending_save_->writer;
  if (wait) writer.join();
  const bool done = writer.finished();
  const int32_t mine[2] = {done ? 0 : 1, done && !writer.error().empty() ? 1 : 0};
  int32_t any[2] = {0, 0};
  collectives_->allreduce(mine, any, 2, STRATA_I32, STRATA_MAX);
  if (any[0] != 0) return;  // some rank is still writing: asked again at a later step
  writer.join();
  const PendingSave save = std::move(*pending_save_);
  pending_save_.reset();
  const std::string where = checkpoint_dir(save.dir, save.tag);
  if (any[1] != 0) {
    const std::vector<std::string> errors = collectives_->allgather_strings(save.writer->error());
    for (size_t r = 0; r < errors.size() && save_failure_.empty(); ++r) {
      if (!errors[r].empty()) {
        save_failure_ = "the checkpoint " + where + " was not saved: rank " + std::to_string(r) +
                        " failed writing its part: " + errors[r] + "; " + save.dir +
                        "/latest still names the previous checkpoint";
      }
    }
    if (world_.rank == 0) {
      logger().error("{}", save_failure_);
      std::error_code ignored;
      std::filesystem::remove_all(partial_checkpoint_dir(save.dir, save.tag), ignored);
    }
    return;
  }
  run_agreed("completing a checkpoint", [&] {
    if (world_.rank == 0) commit_checkpoint(save.dir, save.tag);
  });
  if (world_.rank == 0) logger().info("checkpoint: {} saved; {}/latest names it", where, save.dir);
}

void Engine::end_saves() {
  if (pending_save_ && failure_) {
    // This rank failed: its peers may be gone, and the save cannot complete. A write stuck on the
    // drive must not keep the error from the host; the thread keeps the memory it reads.
    pending_save_->writer->abandon();
    (void)pending_save_->writer.release();
    pending_save_.reset();
    ledger_.abandon(snapshot_);
    snapshot_ = nullptr;
    return;
  }
  if (pending_save_) {
    try {
      finish_save(true);
      if (!save_failure_.empty()) logger().error("{}", save_failure_);
    } catch (const std::exception& e) {
      logger().error("checkpoint: {}", e.what());
    }
  }
  if (pending_save_) {  // finish_save threw before it ended the save: its writer has finished
    pending_save_->writer->join();
    pending_save_.reset();
  }
  ledger_.release(snapshot_);
  snapshot_ = nullptr;
}

float* Engine::snapshot_for(size_t floats) {
  if (floats <= snapshot_floats_) return snapshot_;
  ledger_.release(snapshot_);
  snapshot_ = nullptr;
  snapshot_floats_ = 0;
  // Not touched here: the first save's copy faults its pages in (that save pauses longer; later
  // ones reuse them). Huge pages were tried: with this kernel's defrag=madvise, compacting memory
  // on the fault made the first copy slower still.
  const size_t bytes = std::max<size_t>(floats, 1) * sizeof(float);
  void* memory = ledger_.allocate(bytes, 64, STRATA_MEM_OTHER);
  if (memory == nullptr) {
    throw Error(STRATA_ERR_OUT_OF_MEMORY, "save: cannot allocate " + std::to_string(bytes) +
                                              " bytes to copy this rank's state into");
  }
  snapshot_ = static_cast<float*>(memory);
  snapshot_floats_ = floats;
  return snapshot_;
}

// ---- loading ----

const Engine::Loaded& Engine::load(const std::string& dir, const std::string& tag) {
  require_finalized("load");
  if (dir.empty()) throw Error(STRATA_ERR_INVALID_ARGUMENT, "load: dir is empty");
  if (!at_accumulation_boundary()) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                "load: called in the middle of an accumulation; load between optimizer steps");
  }
  refuse_while_joined("load");
  const WorkScope scope =
      WorkScope::call(step_time_, timeline_.get(), "strata_load", -1, TimePart::RuntimeOther);
  guarded(ApiCall::Load, -1, [&] { finish_save(true); }, false);
  // Reading is local and its failure agreed: a bad checkpoint fails every rank alike, and the
  // runtime stays usable (nothing collective was left half done).
  activity_.enter_call(ApiCall::Load);
  try {
    run_agreed("loading a checkpoint", [&] { load_agreed(dir, tag); });
  } catch (...) {
    activity_.leave_call();
    throw;
  }
  activity_.leave_call();
  guarded(ApiCall::Load, -1, [&] {
    const std::span<const strata_shard> shards = owned_shards();
    model_copies_.after_load(shards.data(), shards.size());
    sharding_.call("publish", &strata_sharding_ops::publish);
    activity_.set_progress(global_steps_, micro_steps_);
  }, false);
  if (world_.rank == 0) {
    logger().info("checkpoint: loaded {} at global step {}", checkpoint_dir(dir, loaded_.tag),
                  global_steps_);
  }
  return loaded_;
}

void Engine::load_agreed(const std::string& dir, const std::string& tag) {
  const std::string name = resolve_checkpoint_tag(dir, tag);
  const std::string tag_dir = checkpoint_dir(dir, name);
  const ckpt::Metadata meta = ckpt::read_metadata(tag_dir);
  const std::string path = (std::filesystem::path(tag_dir) / ckpt::kMetadataFile).string();
  check_same_model(meta, registry_.params(), path);
  const std::vector<std::string> slots = checkpoint_slots(offload_, "load");
  const std::string optimizer = offload_caps_.optimizer != nullptr ? offload_caps_.optimizer : "?";
  const std::vector<size_t> slot_map = match_slots(meta, slots, path, optimizer);
  load_shards(tag_dir, meta, owned_shards(), slot_map, offload_, host_services_.device());

  const json& doc = meta.document;
  const json states = doc.value("plugin_state", json::object());
  const bool same_dtype =
      doc.value("model_dtype", std::string()) == strata_dtype_name(precision_caps_.model_dtype);
  restore_plugin_state(precision_, states.value("precision", json()),
                       same_dtype ? nullptr : "the checkpoint was trained in another precision");
  restore_plugin_state(offload_, states.value("offload", json()), nullptr);
  restore_counters(doc, path);
  loaded_.tag = name;
  loaded_.extra_json = doc.value("extra", json::object()).dump();
  loaded_.global_steps = global_steps_;
  loaded_.skipped_steps = skipped_steps_;
}

void Engine::restore_counters(const json& doc, const std::string& path) {
  const json counters = doc.value("counters", json());
  if (!counters.is_object()) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT, path + ": counters: expected an object");
  }
  const json scheduler = doc.value("scheduler", json::object());
  const json iteration = scheduler.is_object() ? scheduler.value("last_batch_iteration", json(-1)) : json();
  const json override_lr = scheduler.is_object() ? scheduler.value("lr_override", json()) : json();
  if (!iteration.is_number_integer() || (!override_lr.is_null() && !override_lr.is_number())) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                path + ": scheduler: expected last_batch_iteration (an integer) and lr_override "
                       "(a number or null)");
  }
  global_steps_ = counter(counters, "global_steps", path);
  applied_steps_ = counter(counters, "applied_steps", path);
  skipped_steps_ = counter(counters, "skipped_steps", path);
  consecutive_skips_ = counter(counters, "consecutive_skips", path);
  micro_steps_ = global_steps_ * batch_.gradient_accumulation_steps;
  schedule_iteration_ = iteration.get<int64_t>();
  lr_override_ = override_lr.is_null() ? std::numeric_limits<double>::quiet_NaN()
                                       : override_lr.get<double>();
}

}  // namespace strata::rt
