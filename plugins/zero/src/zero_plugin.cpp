#include "zero_plugin.hpp"

#include <cstddef>
#include <string>

namespace strata::zero {

using sdk::fail;

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::string device_text(const strata_device& d) {
  return d.type == STRATA_DEVICE_CUDA ? "CUDA device " + std::to_string(d.index)
                                      : d.type == STRATA_DEVICE_HOST ? std::string("the host")
                                                                     : "device type " + std::to_string(d.type);
}

}  // namespace

ZeroPlugin::ZeroPlugin(const char* config_json, const strata_host_api* host)
    : host_(host), config_(parse_config(config_json)), stage_(make_stage(config_, host_)) {
  // One warning, not silence: a ds_config tuned for stage 2 or 3 should not look honoured.
  if (!config_.ignored_keys.empty()) {
    host_.log(STRATA_LOG_WARN, "zero_optimization: these keys have no effect at stage %d: %s",
              config_.stage, join(config_.ignored_keys).c_str());
  }
}

void ZeroPlugin::query(strata_sharding_caps* caps) const {
  if (caps == nullptr) fail(STRATA_ERR_INVALID_ARGUMENT, "query: caps is NULL");
  // Write only the fields inside the size the caller gave (older hosts pass smaller structs).
  if (STRATA_STRUCT_HAS(caps, strata_sharding_caps, stage)) caps->stage = stage_->number();
  if (STRATA_STRUCT_HAS(caps, strata_sharding_caps, shards_replicated)) {
    caps->shards_replicated = stage_->shards_replicated() ? 1 : 0;
  }
  // ABI 1.9: only stage 3 partitions parameters, so only there do written values need a home.
  if (STRATA_STRUCT_HAS(caps, strata_sharding_caps, features)) {
    caps->features = stage_->number() == 3
                         ? STRATA_SHARDING_WRITABLE_GATHER | STRATA_SHARDING_DEFERRED_VALUES
                         : 0u;
  }
}

void ZeroPlugin::register_param(uint32_t index, const strata_param_desc* desc) {
  if (finalized_) fail(STRATA_ERR_INVALID_ARGUMENT, "register_param: called after finalize");
  if (desc == nullptr || !STRATA_STRUCT_HAS(desc, strata_param_desc, grad)) {
    fail(STRATA_ERR_ABI, "register_param: parameter descriptor missing or too small");
  }
  if (index != params_.size()) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "register_param: expected index " +
                                          std::to_string(params_.size()) + ", got " +
                                          std::to_string(index) + " (indices are dense from 0)");
  }
  ParamRecord param;
  param.name = desc->name != nullptr ? desc->name : "#" + std::to_string(index);
  param.dtype = desc->dtype;
  param.device = desc->device;
  param.count = desc->count;
  param.data = desc->data;
  param.grad = desc->grad;
  stage_->check_param(param);
  params_.push_back(std::move(param));
  group_of_.push_back(kNoGroup);
}

void ZeroPlugin::define_group(uint32_t group, const char* name, const uint32_t* params,
                              size_t count) {
  if (finalized_) fail(STRATA_ERR_INVALID_ARGUMENT, "define_group: called after finalize");
  if (group != groups_.size()) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "define_group: expected group id " +
                                          std::to_string(groups_.size()) + ", got " +
                                          std::to_string(group) + " (ids are dense from 0)");
  }
  if (name == nullptr || *name == '\0') {
    fail(STRATA_ERR_INVALID_ARGUMENT, "define_group: group " + std::to_string(group) +
                                          " needs a non-empty name");
  }
  for (const GroupRecord& g : groups_) {
    if (g.name == name) {
      fail(STRATA_ERR_INVALID_ARGUMENT,
           "define_group: a group named '" + std::string(name) + "' is already defined");
    }
  }
  sdk::require_array(params, count, "define_group: params");
  GroupRecord record{name, std::vector<uint32_t>(params, params + count)};
  std::vector<uint32_t> owner = group_of_;  // assigned only once the whole group is valid
  for (uint32_t p : record.params) {
    check_index("define_group", p);
    if (owner[p] != kNoGroup) {
      const std::string where =
          owner[p] == group ? "this group twice" : "group '" + groups_[owner[p]].name + "'";
      fail(STRATA_ERR_INVALID_ARGUMENT, "define_group '" + record.name + "': parameter " +
                                            params_[p].name + " is already in " + where +
                                            " (a parameter belongs to at most one group)");
    }
    owner[p] = group;
  }
  group_of_ = std::move(owner);
  groups_.push_back(std::move(record));
}

void ZeroPlugin::finalize() {
  if (finalized_) fail(STRATA_ERR_INVALID_ARGUMENT, "finalize: called twice");
  check_devices();
  stage_->finalize(params_, groups_);
  finalized_ = true;
}

void ZeroPlugin::gather(uint32_t group, uint32_t flags) {
  require_finalized("gather");
  if ((flags & ~(STRATA_GATHER_FOR_BACKWARD | STRATA_GATHER_FOR_WRITE)) != 0) {
    fail(STRATA_ERR_INVALID_ARGUMENT,
         "gather: unknown flags " + std::to_string(flags) +
             " (expected 0, STRATA_GATHER_FOR_BACKWARD and/or STRATA_GATHER_FOR_WRITE)");
  }
  if ((flags & STRATA_GATHER_FOR_WRITE) != 0 && stage_->number() != 3) {
    fail(STRATA_ERR_UNSUPPORTED, "gather: STRATA_GATHER_FOR_WRITE at stage " +
                                     std::to_string(stage_->number()) +
                                     ": the host's buffers are the parameters there; write them");
  }
  stage_->gather(group, flags);
}

void ZeroPlugin::release(uint32_t group) {
  require_finalized("release");
  stage_->release(group);
}

void ZeroPlugin::param_view(uint32_t index, strata_param_view* view) {
  require_finalized("param_view");
  check_index("param_view", index);
  if (view == nullptr ||
      view->struct_size < offsetof(strata_param_view, grad) + sizeof(view->grad)) {
    fail(STRATA_ERR_ABI, "param_view: view missing or smaller than its data and grad fields");
  }
  void* data = nullptr;
  void* grad = nullptr;
  stage_->param_view(index, &data, &grad);
  view->data = data;
  view->grad = grad;
  if (STRATA_STRUCT_HAS(view, strata_param_view, count)) view->count = params_[index].count;
  if (STRATA_STRUCT_HAS(view, strata_param_view, dtype)) view->dtype = params_[index].dtype;
}

void ZeroPlugin::end_micro_step(bool boundary) {
  require_finalized("end_micro_step");
  stage_->end_micro_step(boundary);
}

void ZeroPlugin::grad_ready(uint32_t index, bool boundary) {
  require_finalized("grad_ready");
  check_index("grad_ready", index);
  stage_->grad_ready(index, boundary);
}

void ZeroPlugin::finish_reduce() {
  require_finalized("finish_reduce");
  stage_->finish_reduce();
}

void ZeroPlugin::owned_shards(const strata_shard** shards, size_t* count) {
  require_finalized("owned_shards");
  if (shards == nullptr || count == nullptr) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "owned_shards: shards and count must not be NULL");
  }
  const std::vector<strata_shard>& owned = stage_->owned_shards();
  *shards = owned.data();
  *count = owned.size();
}

void ZeroPlugin::shard_ranges(const strata_shard** shards, size_t* count) {
  require_finalized("shard_ranges");
  if (shards == nullptr || count == nullptr) {
    fail(STRATA_ERR_INVALID_ARGUMENT, "shard_ranges: shards and count must not be NULL");
  }
  const std::vector<strata_shard>& ranges = stage_->shard_ranges();
  *shards = ranges.data();
  *count = ranges.size();
}

void ZeroPlugin::publish() {
  require_finalized("publish");
  stage_->publish();
}

void ZeroPlugin::zero_grad() {
  require_finalized("zero_grad");
  stage_->zero_grad();
}

void ZeroPlugin::check_devices() const {
  // Every buffer of the plugin follows the job's device (Memory): a parameter elsewhere would be
  // read with the wrong kind of copy.
  const strata_device job = Memory(host_).device();
  for (const ParamRecord& p : params_) {
    if (p.count == 0) continue;
    if (p.device.type != job.type || (job.type == STRATA_DEVICE_CUDA && p.device.index != job.index)) {
      fail(STRATA_ERR_INVALID_ARGUMENT,
           "parameter " + p.name + " is on " + device_text(p.device) + " but the job's device is " +
               device_text(job) + " (every parameter must be where the host registered the first)");
    }
  }
}

void ZeroPlugin::require_finalized(const char* call) const {
  if (!finalized_)
    fail(STRATA_ERR_INVALID_ARGUMENT, std::string(call) + ": called before finalize");
}

void ZeroPlugin::check_index(const char* call, uint32_t index) const {
  if (index >= params_.size()) {
    fail(STRATA_ERR_INVALID_ARGUMENT, std::string(call) + ": parameter index " +
                                          std::to_string(index) + " out of range (" +
                                          std::to_string(params_.size()) + " registered)");
  }
}

}  // namespace strata::zero
