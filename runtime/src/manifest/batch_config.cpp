// The batch a rank runs with: the arithmetic lives in the strata_elasticity library
// (elastic/batch_rules.hpp), shared with strata-run; here it meets the manifest and the runtime's
// error type.
#include "elastic/batch_rules.hpp"
#include "error.hpp"
#include "manifest/manifest.hpp"

#include <string>

namespace strata::rt {

BatchConfig resolve_batch(const Manifest& manifest, int world_size, uint64_t first_world_size) {
  if (world_size <= 0) {
    throw Error(STRATA_ERR_INTERNAL,
                "resolve_batch: world size must be positive, got " + std::to_string(world_size));
  }
  try {
    elastic::BatchPlan plan = elastic::read_batch_plan(manifest.json, manifest.source);
    plan.keys = {manifest.train_batch_size, manifest.train_micro_batch_size_per_gpu,
                 manifest.gradient_accumulation_steps};
    const elastic::Batch b =
        elastic::batch_at(plan, first_world_size, static_cast<uint64_t>(world_size), manifest.source);
    return {b.train_batch_size, b.micro_batch_size, b.gradient_accumulation_steps};
  } catch (const elastic::BatchError& e) {
    throw Error(STRATA_ERR_INVALID_ARGUMENT, e.what());
  }
}

}  // namespace strata::rt
