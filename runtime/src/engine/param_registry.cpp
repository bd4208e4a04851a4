#include "engine/param_registry.hpp"

#include "device/cuda_device.hpp"
#include "device/device_placement.hpp"
#include "error.hpp"
#include "engine/host_structs.hpp"

#include <strata/plugin.hpp>
#include <strata/strata.h>

#include <algorithm>
#include <sstream>

namespace strata::rt {
namespace {

// One line per parameter: the same text on two ranks means the same registration.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

strata_param_desc ParamRecord::desc() const {
  strata_param_desc d{};
  d.struct_size = sizeof(d);
  d.name = name.c_str();
  d.dtype = dtype;
  d.device = device;
  d.count = count;
  d.data = data;
  d.grad = grad;
  return d;
}

std::string ParamRecord::signature() const {
  return "'" + name + "' " + strata_dtype_name(dtype) + "[" + std::to_string(count) + "]";
}

uint64_t ParamRecord::bytes() const { return count * sdk::dtype_size(dtype); }

uint32_t ParamRegistry::add(const strata_param_desc& desc) {
  // `desc` is a full struct: the C API checked the caller's struct_size (strata_register_param)
  // and read it with read_host_struct.
  const std::string name = desc.name != nullptr ? desc.name : "";
  const std::string where = "register_param '" + name + "': ";
  if (name.empty() || name.find('\n') != std::string::npos) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                "register_param: parameter " + std::to_string(params_.size()) +
                    " needs a non-empty one-line name");
  }
  auto same_name = [&](const ParamRecord& p) { return p.name == name; };
  if (std::any_of(params_.begin(), params_.end(), same_name)) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT, where + "a parameter with this name is already registered");
  }
  if (sdk::dtype_size(desc.dtype) == 0) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT, where + "unknown dtype " + std::to_string(desc.dtype));
  }
  if (desc.device.type == STRATA_DEVICE_CUDA) {
    if (desc.device.index < 0) {
      throw Error(STRATA_ERR_INVALID_ARGUMENT, where + "device.index " +
                                                   std::to_string(desc.device.index) +
                                                   " is not a CUDA ordinal (expected >= 0)");
    }
    if (!cuda::built_with_cuda()) {
      throw Error(STRATA_ERR_UNSUPPORTED, where + "the parameter is in " +
                                              device_text(desc.device) + " memory, but " +
                                              cuda::without_cuda_reason());
    }
  } else if (desc.device.type != STRATA_DEVICE_HOST) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                where + "unknown device type " + std::to_string(desc.device.type) +
                    " (expected STRATA_DEVICE_HOST or STRATA_DEVICE_CUDA)");
  }
  if (desc.count == 0) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT,
                where + "needs count > 0 (grad may be NULL: the runtime then provides gradient "
                        "storage; data may be NULL where the sharding stage partitions the "
                        "parameter, API 1.9)");
  }
  params_.push_back({name, desc.dtype, desc.device, desc.count, desc.data, desc.grad});
  grouped_.push_back(0);
  return static_cast<uint32_t>(params_.size() - 1);
}

uint32_t ParamRegistry::add_group(const std::string& name, const uint32_t* params, size_t count) {
  const std::string where = "define_group '" + name + "': ";
  if (name.empty() || name.find('\n') != std::string::npos) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT, "define_group: group " +
                                                 std::to_string(groups_.size()) +
                                                 " needs a non-empty one-line name");
  }
  for (const GroupRecord& g : groups_) {
    if (g.name == name) {
      throw Error(STRATA_ERR_INVALID_ARGUMENT, where + "a group with this name is already defined");
    }
  }
  if (count == 0 || params == nullptr) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT, where + "needs at least one parameter index");
  }
  GroupRecord group{name, std::vector<uint32_t>(params, params + count)};
  std::vector<uint8_t> seen(params_.size(), 0);
  for (uint32_t index : group.params) {
    if (index >= params_.size()) {
      throw Error(STRATA_ERR_INVALID_ARGUMENT,
                  where + "no parameter with index " + std::to_string(index) + " (" +
                      std::to_string(params_.size()) + " registered)");
    }
    if (grouped_[index] != 0 || seen[index] != 0) {
      throw Error(STRATA_ERR_INVALID_ARGUMENT, where + "parameter " + params_[index].signature() +
                                                   " is already in a group");
    }
    seen[index] = 1;
  }
  for (uint32_t index : group.params) grouped_[index] = 1;
  groups_.push_back(std::move(group));
  return static_cast<uint32_t>(groups_.size() - 1);
}

void ParamRegistry::verify_same_on_all_ranks(const Collectives& collectives) const {
  std::string mine;
  // Deferred values (NULL data) are part of what must agree: finalize broadcasts the others.
  for (const ParamRecord& p : params_) {
    mine += p.signature() + (p.data == nullptr ? " (no data: deferred values)" : "") + "\n";
  }
  for (const GroupRecord& g : groups_) {
    mine += "group '" + g.name + "' {";
    for (size_t k = 0; k < g.params.size(); ++k) {
      mine += (k == 0 ? "" : ", ") + params_[g.params[k]].name;
    }
    mine += "}\n";
  }
  const std::vector<std::string> all = collectives.allgather_strings(mine);
  const std::vector<std::string> reference = split_lines(all[0]);
  // Every rank runs this same comparison on the same data, so every rank throws the same error.
  for (size_t rank = 1; rank < all.size(); ++rank) {
    if (all[rank] == all[0]) continue;
    const std::vector<std::string> theirs = split_lines(all[rank]);
    const size_t common = std::min(reference.size(), theirs.size());
    size_t i = 0;
    while (i < common && reference[i] == theirs[i]) ++i;
    const std::string r = std::to_string(rank);
    std::string what;
    if (i < common) {
      // Parameter lines come first, then group lines ("group 'fc1' {W1, b1}").
      const bool group = reference[i].rfind("group ", 0) == 0 || theirs[i].rfind("group ", 0) == 0;
      what = (group ? std::string("a group definition") : "parameter " + std::to_string(i)) +
             " differs between ranks: rank 0 registered " + reference[i] + ", rank " + r +
             " registered " + theirs[i];
    } else {
      const bool rank0_longer = reference.size() > theirs.size();
      what = "rank 0 registered " + std::to_string(reference.size()) + " parameters, rank " + r +
             " registered " + std::to_string(theirs.size()) + "; first unmatched: parameter " +
             std::to_string(i) + " " + (rank0_longer ? reference[i] : theirs[i]) + " on rank " +
             (rank0_longer ? "0" : r);
    }
    throw Error(STRATA_ERR_MISMATCH, "finalize: " + what);
  }
}

}  // namespace strata::rt
