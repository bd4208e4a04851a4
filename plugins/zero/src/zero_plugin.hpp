// One strata_zero instance: the parameter and group registry and the call-order checks every
// stage shares, in front of the Stage the config chose.
#pragma once

#include "config.hpp"
#include "device_memory.hpp"
#include "param.hpp"
#include "stage.hpp"

#include <strata/plugin.hpp>

#include <memory>
#include <vector>

namespace strata::zero {

class ZeroPlugin {
 public:
  ZeroPlugin(const char* config_json, const strata_host_api* host);

  void query(strata_sharding_caps* caps) const;
  void register_param(uint32_t index, const strata_param_desc* desc);
  void finalize();
  void grad_ready(uint32_t index, bool boundary);
  void finish_reduce();
  void owned_shards(const strata_shard** shards, size_t* count);
  void shard_ranges(const strata_shard** shards, size_t* count);  // ABI 1.8
  void publish();
  void zero_grad();

  // ABI 1.1
  void define_group(uint32_t group, const char* name, const uint32_t* params, size_t count);
  void gather(uint32_t group, uint32_t flags);
  void release(uint32_t group);
  void param_view(uint32_t index, strata_param_view* view);
  void end_micro_step(bool boundary);

 private:
  void require_finalized(const char* call) const;
  // Every non-empty parameter is on the job's device (the host's device(), ABI 1.7).
  void check_devices() const;
  void check_index(const char* call, uint32_t index) const;

  sdk::Host host_;
  ZeroConfig config_;
  std::unique_ptr<Stage> stage_;
  std::vector<ParamRecord> params_;
  std::vector<GroupRecord> groups_;
  std::vector<uint32_t> group_of_;  // per parameter, kNoGroup until define_group
  bool finalized_ = false;
};

}  // namespace strata::zero
