#include "offload_config.hpp"

#include <strata/plugin.hpp>
#include <strata_common/config_reader.hpp>

namespace strata::offload {
namespace {

using namespace common::config;

OffloadDevice read_device(ObjectReader& block) {
  const json* device = block.find("device");
  if (device == nullptr) return OffloadDevice::none;
  const std::string name = device->is_string() ? lower(device->get<std::string>()) : "";
  if (name == "none") return OffloadDevice::none;
  if (name == "cpu") return OffloadDevice::cpu;
  if (name == "nvme") return OffloadDevice::nvme;
  invalid(block.path("device"), "expected one of none, cpu, nvme, got " + device->dump());
}

uint64_t integer_at_least(ObjectReader& block, const std::string& key, uint64_t fallback,
                          uint64_t least, const char* why) {
  const json* v = block.find(key);
  if (v == nullptr) return fallback;
  if (!v->is_number() || v->get<double>() < static_cast<double>(least) ||
      v->get<double>() != static_cast<double>(static_cast<uint64_t>(v->get<double>()))) {
    invalid(block.path(key), "expected an integer >= " + std::to_string(least) + why + ", got " +
                                 v->dump());
  }
  return static_cast<uint64_t>(v->get<double>());
}

void read_optimizer_block(const json& root, OffloadConfig& c) {
  auto it = root.find("offload_optimizer");
  if (it == root.end() || it->is_null()) return;
  ObjectReader block(*it, "offload_optimizer");
  c.device = read_device(block);
  if (const json* path = block.find("nvme_path")) {
    if (!path->is_string() || path->get<std::string>().empty()) {
      invalid(block.path("nvme_path"), "expected a directory path, got " + path->dump());
    }
    c.nvme_path = path->get<std::string>();
  }
  c.buffer_count = static_cast<uint32_t>(integer_at_least(
      block, "buffer_count", c.buffer_count, 2,
      " (one piece steps while the next is read and the previous written)"));
  c.pin_memory = block.boolean("pin_memory", c.pin_memory);
  // DeepSpeed's switches for overlapping reads and writes: Strata always overlaps them.
  block.boolean("pipeline_read", false);
  block.boolean("pipeline_write", false);
  block.boolean("fast_init", false);  // state files start zeroed whatever this says
  const double ratio = block.number(
      "ratio", 1.0, [](double x) { return x > 0 && x <= 1; }, "a number in (0, 1]");
  if (ratio != 1.0) {
    sdk::fail(STRATA_ERR_UNSUPPORTED,
              "offload_optimizer.ratio: partial offload (ratio < 1) is not implemented; use 1");
  }
  block.reject_unknown("");
}

void read_param_block(const json& root, OffloadConfig& c) {
  auto it = root.find("offload_param");
  if (it == root.end() || it->is_null()) return;
  ObjectReader block(*it, "offload_param");
  c.param_device = read_device(block);
  c.param_pin_memory = block.boolean("pin_memory", c.param_pin_memory);
  if (const json* path = block.find("nvme_path")) {
    if (!path->is_string() || path->get<std::string>().empty()) {
      invalid(block.path("nvme_path"), "expected a directory path, got " + path->dump());
    }
    c.param_nvme_path = path->get<std::string>();
  }
  c.param_buffer_count =
      integer_at_least(block, "buffer_count", c.param_buffer_count, 1, " (buffers read ahead)");
  c.param_buffer_size = integer_at_least(block, "buffer_size", c.param_buffer_size, 1,
                                         " (parameter elements per buffer)");
  // DeepSpeed's cap on parameter elements kept in host memory; the store's memory is its own
  // read-ahead, bounded by buffer_count x buffer_size, so this changes nothing.
  integer_at_least(block, "max_in_cpu", 0, 0, "");
  block.reject_unknown("");
}

}  // namespace

OffloadConfig read_offload(const json& root) {
  OffloadConfig c;
  read_optimizer_block(root, c);
  read_param_block(root, c);
  if (auto fused = root.find("fused_copy_out"); fused != root.end() && !fused->is_null()) {
    if (!fused->is_boolean()) invalid("fused_copy_out", "expected true or false, got " + fused->dump());
    c.fused_copy_out = fused->get<bool>();
  }
  // DeepSpeed spells it inside zero_optimization, and configs write it as 1e9: any integral
  // number will do. (This reader only looks up the one key, so it rejects nothing else.)
  ObjectReader zero(root, "zero_optimization");
  c.sub_group_size = integer_at_least(zero, "sub_group_size", c.sub_group_size, 1, "");
  return c;
}

const char* device_name(OffloadDevice device) {
  switch (device) {
    case OffloadDevice::none: return "none";
    case OffloadDevice::cpu: return "cpu";
    case OffloadDevice::nvme: return "nvme";
  }
  return "unknown";
}

}  // namespace strata::offload
