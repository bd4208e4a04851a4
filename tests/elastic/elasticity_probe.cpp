// Reads one JSON object per line, {"elasticity": {...}, "world_size": N}, and prints one line per
// input: {"batch": B, "valid": [...], "micro": M, "accumulation": A} from strata's
// compute_elastic_config, or {"error": "..."}. test_elasticity_vs_deepspeed.py feeds it the
// configs it also gives DeepSpeed's function.
#include "elastic/elasticity.hpp"

#include <nlohmann/json.hpp>

#include <iostream>
#include <string>

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    nlohmann::json out;
    try {
      const nlohmann::json in = nlohmann::json::parse(line);
      const auto config = strata::elastic::parse_elasticity(in.at("elasticity"), "probe.json");
      const auto choice = strata::elastic::compute_elastic_config(
          config, in.at("world_size").get<uint64_t>(), "probe.json");
      out = {{"batch", choice.train_batch_size},
             {"valid", choice.valid_world_sizes},
             {"micro", choice.micro_batch_size},
             {"accumulation", choice.gradient_accumulation_steps}};
    } catch (const strata::elastic::BatchError& e) {
      out = {{"error", e.what()}};
    }
    std::cout << out.dump() << '\n';
  }
  return 0;
}
