// Reading and validating the JSON manifest: the four strata sections and DeepSpeed training keys.
#pragma once

#include <strata/strata.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace strata::rt {

// One stratum's section: {"library": ..., "sha256": ..., "config": {...}}. A missing section means
// the default library with its config composed from the DeepSpeed keys alone.
struct StratumSpec {
  std::string stratum;                // "comm", "sharding", "precision", "offload"
  std::string library;                // name looked up on the search path, or a path
  std::optional<std::string> sha256;  // lower-case hex, 64 characters
  nlohmann::json config;              // what the plugin's create() receives (always an object)
  std::string json_path;              // "/comm" etc., for messages
};

// The "checkpoint" block's own keys (checkpoint_policy.cpp): the runtime saves every save_every
// optimizer steps (0: never) into dir, and with auto_resume loads dir's latest checkpoint, if there
// is one, at the end of strata_finalize.
struct CheckpointPolicy {
  std::string dir;
  std::string dir_origin;  // "/checkpoint/dir" or "STRATA_CHECKPOINT_DIR", for messages
  uint64_t save_every = 0;
  bool auto_resume = false;
};

struct Manifest {
  std::string source;              // file path as given, or "<inline manifest>"
  std::filesystem::path base_dir;  // manifest's folder (first on the plugin search path)
  nlohmann::json json;             // whole document after overrides
  StratumSpec comm, sharding, precision, offload;
  // DeepSpeed batch keys as written (absent = nullopt); resolved against world size later.
  std::optional<uint64_t> train_batch_size;
  std::optional<uint64_t> train_micro_batch_size_per_gpu;
  std::optional<uint64_t> gradient_accumulation_steps;
  double gradient_clipping = 0.0;
  // Strata's fault keys (issue 10): "stall_inspector": {"warning_seconds", "shutdown_seconds"}
  // (0 turns one off; STRATA_STALL_WARNING_SECONDS / STRATA_STALL_SHUTDOWN_SECONDS override them)
  // and "max_consecutive_skips" (non-finite steps in a row, with no loss scale left to lower,
  // before the run ends).
  double stall_warning_seconds = 60.0;
  double stall_shutdown_seconds = 300.0;
  uint64_t max_consecutive_skips = 10;
  // Issue 12: "timeline": "PATH" (STRATA_TIMELINE overrides it; empty: no timeline), with where the
  // path came from for messages; DeepSpeed's "wall_clock_breakdown" logs the step's time split
  // every "steps_per_print" steps (DeepSpeed's default 10).
  std::string timeline_path;
  std::string timeline_origin;  // "/timeline" or "STRATA_TIMELINE"
  bool wall_clock_breakdown = false;
  uint64_t steps_per_print = 10;
  CheckpointPolicy checkpoint;
  // Issue 33: "join": true lets a rank that ran out of data call strata_join (Horovod's join);
  // each micro-batch then opens with a one-number allreduce of the ranks still contributing.
  bool join = false;
};

// Throws strata::rt::Error (STRATA_ERR_INVALID_ARGUMENT) naming source, JSON path and expectation,
// for any text at all (too large, too deep, out-of-range numbers included); never crashes.
Manifest load_manifest(const strata_create_options& options);

struct BatchConfig {
  uint64_t train_batch_size;
  uint64_t micro_batch_size;
  uint64_t gradient_accumulation_steps;
};

// DeepSpeed's rule: train = micro * accumulation * world; any two determine the third. With an
// enabled "elasticity" block, DeepSpeed's elastic choice for this world size; in a job restarted
// at another size (first_world_size: the size of its first run, 0 for none), the first run's
// global batch and micro-batch with another accumulation (elastic/batch_rules.hpp).
BatchConfig resolve_batch(const Manifest& manifest, int world_size, uint64_t first_world_size = 0);

}  // namespace strata::rt
