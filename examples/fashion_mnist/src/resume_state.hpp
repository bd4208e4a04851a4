// Checkpoints from the host's side: the host's own state saved beside the runtime's, and resuming
// from a checkpoint.
//
// The runtime saves parameters, optimizer state, loss scaler, schedule and step counters; the host
// adds what decides the samples that follow: the data position (the next step's epoch and step in
// it) and the RNG state. The only randomness that continues through a run is the per-epoch
// shuffle, which depends only on the seed and the epoch (BatchPlan); the model's init uses the
// seed once and is overwritten by the load. So the seed is the whole RNG state. The global batch
// is kept too: a position in steps means the same samples only at the same global batch, and is
// mapped through the sample count when the batch changed.
#pragma once

#include <strata/strata.hpp>

#include <cstdint>
#include <string>

#include "trainer.hpp"

namespace strata::fmnist {

// The host state saved with each checkpoint (a JSON object text).
std::string host_state(const DataPosition& next, uint64_t seed, uint64_t global_batch);

struct ResumedState {
  DataPosition next;
  uint64_t seed = 0;
  uint64_t global_steps = 0;
  uint64_t saved_global_batch = 0;  // the checkpoint's; another one maps the position
  uint64_t repeated_samples = 0;    // of a partial step at the old batch, seen again
};

// Loads the checkpoint at `path` (DIR: its latest; DIR/TAG: that one) into the runtime and reads
// the host state back; rank 0 says what it resumed. A checkpoint saved at another global batch
// resumes at the same sample of its epoch, rounded down to a whole step of this one. Throws when
// the host state is missing. Collective.
ResumedState resume(strata::Runtime& runtime, const std::string& path, uint64_t global_batch,
                    uint64_t seed_option);

// The same for a checkpoint the runtime already loaded (the manifest's checkpoint block with
// auto_resume: Runtime::resumed()), from `dir`.
ResumedState resumed_state(strata::Runtime& runtime, const strata::LoadResult& loaded, const std::string& dir,
                           uint64_t global_batch, uint64_t seed_option);

}  // namespace strata::fmnist
