// DeepSpeed 0.14's elasticity arithmetic, function by function (get_candidate_batch_sizes,
// get_valid_gpus, get_best_candidates, _get_compatible_gpus_v01/_v02, compute_elastic_config),
// keeping its quirks where they change a result: version 0.2's float arithmetic for a world size
// that is not a whole number of nodes, and a highly composite multiplier that wraps to the last
// one when the batch limit exceeds them all (numpy's argmax of an all-false array is 0).
#include "elastic/elasticity.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <set>

namespace strata::elastic {
namespace {

// deepspeed/elasticity/elasticity.py HCN_LIST: highly composite numbers.
constexpr uint64_t kHighlyComposite[] = {
    1,     2,     4,     6,     12,     24,     36,     48,     60,     120,    180,    240,   360,
    720,   840,   1260,  1680,  2520,   5040,   7560,   10080,  15120,  20160,  25200,  27720, 45360,
    50400, 55440, 83160, 110880, 166320, 221760, 277200, 332640, 498960, 554400, 665280, 720720};

const char* const kKeys[] = {"enabled",           "max_train_batch_size", "micro_batch_sizes",
                             "min_gpus",          "max_gpus",             "num_gpus_per_node",
                             "model_parallel_size", "min_time",           "version",
                             "prefer_larger_batch", "ignore_non_elastic_batch_info"};

constexpr uint64_t kMaxBatch = uint64_t{1} << 40;
constexpr uint64_t kMaxGpus = uint64_t{1} << 17;  // 131072
constexpr size_t kMaxMicroBatchSizes = 16;

std::string where(const std::string& source, const char* key) {
  return source + ": elasticity." + key;
}

// A whole number of at least 1: DeepSpeed reads 2000.0 or 1e4 as well as 2000 (Python compares
// and divides them alike), so whole-valued floats count too.
std::optional<uint64_t> whole_positive(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    return v.get<uint64_t>() >= 1 ? std::optional<uint64_t>(v.get<uint64_t>()) : std::nullopt;
  }
  if (v.is_number_integer()) return std::nullopt;  // negative
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (d >= 1 && d <= 9007199254740992.0 && std::floor(d) == d) return static_cast<uint64_t>(d);
  }
  return std::nullopt;
}

uint64_t positive_integer(const nlohmann::json& block, const char* key, const std::string& source,
                          uint64_t fallback) {
  if (!block.contains(key)) return fallback;
  const std::optional<uint64_t> value = whole_positive(block.at(key));
  if (!value) {
    throw BatchError(where(source, key) + ": expected an integer of at least 1, got " + block.at(key).dump());
  }
  return *value;
}

bool boolean(const nlohmann::json& block, const char* key, const std::string& source, bool fallback) {
  if (!block.contains(key)) return fallback;
  const nlohmann::json& v = block.at(key);
  if (!v.is_boolean()) throw BatchError(where(source, key) + ": expected true or false, got " + v.dump());
  return v.get<bool>();
}

// DeepSpeed takes float(version): a number or a numeric string.
double version_of(const nlohmann::json& v, const std::string& source) {
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const std::string text = v.get<std::string>();
    try {
      size_t used = 0;
      const double value = std::stod(text, &used);
      if (used == text.size()) return value;
    } catch (const std::exception&) {
    }
  }
  throw BatchError(where(source, "version") + ": expected 0.1 or 0.2, got " + v.dump());
}

using Sizes = std::vector<uint64_t>;

Sizes candidate_batch_sizes(const Sizes& bases, uint64_t max_batch) {
  std::set<uint64_t> out;
  for (const uint64_t base : bases) {
    if (base >= max_batch) {
      out.insert(base);
      continue;
    }
    const uint64_t value = max_batch / base;
    const auto* first_above = std::find_if(std::begin(kHighlyComposite), std::end(kHighlyComposite),
                                           [&](uint64_t h) { return h > value; });
    // numpy's argmax of all-false is 0, and HCN_LIST[0 - 1] is the last entry.
    const uint64_t multiplier = first_above == std::begin(kHighlyComposite) ||
                                        first_above == std::end(kHighlyComposite)
                                    ? std::end(kHighlyComposite)[-1]
                                    : first_above[-1];
    out.insert(multiplier * base);
  }
  return Sizes(out.begin(), out.end());
}

Sizes valid_world_sizes(uint64_t batch, const Sizes& micro_batches, uint64_t min_gpus, uint64_t max_gpus) {
  std::set<uint64_t> valid;
  for (const uint64_t micro : micro_batches) {
    if (batch % micro != 0) continue;
    const uint64_t most = batch / micro;
    if (min_gpus <= most && most <= max_gpus) valid.insert(most);
    for (uint64_t i = 1; i <= most / 2; ++i) {
      if (i > max_gpus) break;
      if (i < min_gpus) continue;
      if (most % i == 0) valid.insert(i);
    }
  }
  return Sizes(valid.begin(), valid.end());
}

struct Compatible {
  uint64_t batch = 0;
  std::optional<Sizes> valid;  // none: no candidate had a valid size (DeepSpeed's None)
};

// get_best_candidates: the most valid sizes, ties to the larger (or smaller) batch. The running
// best starts at (0 sizes, the smallest micro-batch), as DeepSpeed's does, so the result does not
// depend on the order of its set of candidates.
Compatible best_candidate(const Sizes& candidates, const Sizes& micro_batches, uint64_t min_gpus,
                          uint64_t max_gpus, bool prefer_larger) {
  Compatible best{*std::min_element(micro_batches.begin(), micro_batches.end()), std::nullopt};
  size_t best_count = 0;
  for (const uint64_t batch : candidates) {
    Sizes valid = valid_world_sizes(batch, micro_batches, min_gpus, max_gpus);
    const bool better = valid.size() > best_count ||
                        (valid.size() == best_count &&
                         (prefer_larger ? batch > best.batch : batch < best.batch));
    if (!better) continue;
    best_count = valid.size();
    best = {batch, std::move(valid)};
  }
  return best;
}

Compatible compatible_v01(const Sizes& micro_batches, uint64_t max_batch, uint64_t min_gpus,
                          uint64_t max_gpus, bool prefer_larger, const std::string& source) {
  const uint64_t smallest = *std::min_element(micro_batches.begin(), micro_batches.end());
  if (min_gpus == 0) min_gpus = 1;
  if (max_gpus == 0) max_gpus = max_batch / smallest;
  for (const uint64_t micro : micro_batches) {
    if (micro > max_batch) {
      throw BatchError(where(source, "micro_batch_sizes") + ": every micro-batch must be at most " +
                            "max_train_batch_size " + std::to_string(max_batch) + ", got " +
                            std::to_string(micro));
    }
  }
  // numpy's lcm wraps around on overflow; here it saturates (only absurd lists get there).
  uint64_t lcm = 1;
  for (const uint64_t micro : micro_batches) {
    const uint64_t step = micro / std::gcd(lcm, micro);
    lcm = lcm > std::numeric_limits<uint64_t>::max() / step ? std::numeric_limits<uint64_t>::max() : lcm * step;
  }
  Sizes bases = micro_batches;
  bases.push_back(lcm);
  return best_candidate(candidate_batch_sizes(bases, max_batch), micro_batches, min_gpus, max_gpus,
                        prefer_larger);
}

struct V02Result {
  double batch = 0;
  Sizes valid;
};

V02Result compatible_v02(const ElasticityConfig& c, uint64_t world, const std::string& source) {
  if (c.num_gpus_per_node % c.model_parallel_size != 0) {
    throw BatchError(where(source, "num_gpus_per_node") + ": version 0.2 needs it divisible by " +
                          "model_parallel_size " + std::to_string(c.model_parallel_size) + ", got " +
                          std::to_string(c.num_gpus_per_node));
  }
  const uint64_t dp_per_node = c.num_gpus_per_node / c.model_parallel_size;
  const double gpn = double(c.num_gpus_per_node);
  // Version 0.2 works in nodes: the limits are divided by the node's size (float, truncated).
  const Compatible nodes = compatible_v01(
      c.micro_batch_sizes, uint64_t(double(c.max_train_batch_size) / double(dp_per_node)),
      uint64_t(double(c.min_gpus) / gpn), uint64_t(double(c.max_gpus) / gpn), c.prefer_larger_batch,
      source);
  if (!nodes.valid) {
    throw BatchError(source + ": elasticity: no batch size up to max_train_batch_size " +
                          std::to_string(c.max_train_batch_size) + " has a valid node count between " +
                          "min_gpus and max_gpus");
  }
  V02Result out;
  out.batch = double(nodes.batch * dp_per_node);
  for (const uint64_t n : *nodes.valid) out.valid.push_back(n * dp_per_node);
  if (std::find(out.valid.begin(), out.valid.end(), world / c.model_parallel_size) != out.valid.end()) {
    return out;
  }
  // Not a valid size: the batch is fitted to this world size instead.
  const double dp_size = double(world) / gpn * double(dp_per_node);
  std::vector<double> candidates;
  for (const uint64_t micro : c.micro_batch_sizes) {
    const double smallest = double(micro) * dp_size;
    candidates.push_back(std::floor(double(c.max_train_batch_size) / smallest) * smallest);
  }
  out.batch = c.prefer_larger_batch ? *std::max_element(candidates.begin(), candidates.end())
                                    : *std::min_element(candidates.begin(), candidates.end());
  out.valid = {uint64_t(dp_size)};
  return out;
}

std::string list(const Sizes& sizes) {
  std::string out = "[";
  for (const uint64_t s : sizes) out += (out.size() > 1 ? ", " : "") + std::to_string(s);
  return out + "]";
}

}  // namespace

ElasticityConfig parse_elasticity(const nlohmann::json& block, const std::string& source) {
  if (!block.is_object()) throw BatchError(source + ": elasticity: expected an object, got " + block.dump());
  for (const auto& item : block.items()) {
    if (std::find(std::begin(kKeys), std::end(kKeys), item.key()) == std::end(kKeys)) {
      std::string known;
      for (const char* key : kKeys) known += std::string(known.empty() ? "" : ", ") + key;
      throw BatchError(source + ": elasticity." + item.key() + ": unknown key (known: " + known + ")");
    }
  }
  ElasticityConfig c;
  c.enabled = boolean(block, "enabled", source, false);
  for (const char* key : {"max_train_batch_size", "micro_batch_sizes"}) {
    if (c.enabled && !block.contains(key)) {
      throw BatchError(where(source, key) + ": required when elasticity is enabled");
    }
  }
  c.max_train_batch_size = positive_integer(block, "max_train_batch_size", source, c.max_train_batch_size);
  // Bounds DeepSpeed does not have, far beyond any real job, that keep the arithmetic below from
  // overflowing or running for hours on a hostile manifest.
  if (c.max_train_batch_size > kMaxBatch) {
    throw BatchError(where(source, "max_train_batch_size") + ": expected at most " + std::to_string(kMaxBatch) +
                     ", got " + std::to_string(c.max_train_batch_size));
  }
  if (block.contains("micro_batch_sizes")) {
    const nlohmann::json& v = block.at("micro_batch_sizes");
    const bool ok = v.is_array() && !v.empty() &&
                    std::all_of(v.begin(), v.end(), [](const nlohmann::json& m) { return whole_positive(m).has_value(); });
    if (!ok) {
      throw BatchError(where(source, "micro_batch_sizes") +
                            ": expected a non-empty list of positive integers, got " + v.dump());
    }
    if (v.size() > kMaxMicroBatchSizes) {
      throw BatchError(where(source, "micro_batch_sizes") + ": expected at most " +
                       std::to_string(kMaxMicroBatchSizes) + " sizes, got " + std::to_string(v.size()));
    }
    c.micro_batch_sizes.clear();
    for (const nlohmann::json& m : v) c.micro_batch_sizes.push_back(*whole_positive(m));
  }
  c.min_gpus = positive_integer(block, "min_gpus", source, c.min_gpus);
  c.max_gpus = positive_integer(block, "max_gpus", source, c.max_gpus);
  if (c.min_gpus > kMaxGpus || c.max_gpus > kMaxGpus) {
    throw BatchError(where(source, c.min_gpus > kMaxGpus ? "min_gpus" : "max_gpus") + ": expected at most " +
                     std::to_string(kMaxGpus) + ", got " + std::to_string(std::max(c.min_gpus, c.max_gpus)));
  }
  if (c.max_gpus < c.min_gpus) {
    throw BatchError(where(source, "min_gpus") + ": " + std::to_string(c.min_gpus) +
                          " is above max_gpus " + std::to_string(c.max_gpus));
  }
  c.num_gpus_per_node = positive_integer(block, "num_gpus_per_node", source, c.num_gpus_per_node);
  c.model_parallel_size = positive_integer(block, "model_parallel_size", source, c.model_parallel_size);
  if (block.contains("min_time")) {
    const nlohmann::json& v = block.at("min_time");
    if (!v.is_number() || v.get<double>() < 0) {
      throw BatchError(where(source, "min_time") + ": expected a number of at least 0, got " + v.dump());
    }
    c.min_time = v.get<double>();
  }
  if (block.contains("version")) c.version = version_of(block.at("version"), source);
  c.prefer_larger_batch = boolean(block, "prefer_larger_batch", source, c.prefer_larger_batch);
  c.ignore_non_elastic_batch_info =
      boolean(block, "ignore_non_elastic_batch_info", source, c.ignore_non_elastic_batch_info);
  return c;
}

ElasticChoice compute_elastic_config(const ElasticityConfig& c, uint64_t world_size,
                                     const std::string& source) {
  if (!c.enabled) throw BatchError(where(source, "enabled") + ": elasticity is disabled");
  if (c.model_parallel_size > 1 && c.version != 0.2) {
    throw BatchError(where(source, "model_parallel_size") + ": only version 0.2 supports " +
                          "model parallelism, got " + std::to_string(c.model_parallel_size));
  }
  if (c.version > 0.2) {
    throw BatchError(where(source, "version") + ": the latest is 0.2, got " + std::to_string(c.version));
  }
  ElasticChoice out;
  if (c.version == 0.1) {
    const Compatible v01 = compatible_v01(c.micro_batch_sizes, c.max_train_batch_size, c.min_gpus,
                                          c.max_gpus, c.prefer_larger_batch, source);
    if (!v01.valid) {
      throw BatchError(source + ": elasticity: no batch size up to max_train_batch_size " +
                            std::to_string(c.max_train_batch_size) + " has a valid world size between min_gpus " +
                            std::to_string(c.min_gpus) + " and max_gpus " + std::to_string(c.max_gpus));
    }
    out.train_batch_size = v01.batch;
    out.valid_world_sizes = *v01.valid;
  } else if (c.version == 0.2) {
    if (world_size == 0) throw BatchError(where(source, "version") + ": 0.2 needs the world size");
    const V02Result v02 = compatible_v02(c, world_size, source);
    out.train_batch_size = uint64_t(v02.batch);
    out.valid_world_sizes = v02.valid;
  } else {
    throw BatchError(where(source, "version") + ": expected 0.1 or 0.2, got " + std::to_string(c.version));
  }
  if (world_size == 0) return out;
  const Sizes& valid = out.valid_world_sizes;
  if (std::find(valid.begin(), valid.end(), world_size) == valid.end()) {
    throw BatchError(source + ": elasticity: world size " + std::to_string(world_size) +
                          " is not one of the valid sizes " + list(valid) + " (global batch " +
                          std::to_string(out.train_batch_size) + ")");
  }
  const std::set<uint64_t> micro(c.micro_batch_sizes.begin(), c.micro_batch_sizes.end());
  for (auto it = micro.rbegin(); it != micro.rend(); ++it) {
    if (out.train_batch_size / world_size % *it == 0) {
      out.micro_batch_size = *it;
      break;
    }
  }
  if (out.micro_batch_size == 0) {
    throw BatchError(source + ": elasticity: no micro-batch in " + list(c.micro_batch_sizes) +
                          " divides the global batch " + std::to_string(out.train_batch_size) +
                          " over world size " + std::to_string(world_size));
  }
  out.gradient_accumulation_steps = out.train_batch_size / (out.micro_batch_size * world_size);
  return out;
}

}  // namespace strata::elastic
