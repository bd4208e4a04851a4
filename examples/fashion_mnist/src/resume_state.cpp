#include "resume_state.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <utility>

namespace strata::fmnist {
namespace fs = std::filesystem;
namespace {

ResumedState parse_host_state(const std::string& text, const std::string& where,
                              uint64_t global_batch) {
  const auto fail = [&](const std::string& what) {
    return std::runtime_error(where + ": host state " + what);
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw fail("is not JSON (" + std::string(e.what()) + ")");
  }
  for (const char* key : {"epoch", "step_in_epoch", "seed", "train_batch_size"}) {
    if (!j.is_object() || !j.contains(key) || !j[key].is_number_unsigned()) {
      throw fail("has no unsigned integer '" + std::string(key) +
                 "' (not saved by fashion_mnist?): " + text);
    }
  }
  ResumedState state;
  state.next = {j["epoch"].get<uint64_t>(), j["step_in_epoch"].get<uint64_t>()};
  state.seed = j["seed"].get<uint64_t>();
  state.saved_global_batch = j["train_batch_size"].get<uint64_t>();
  if (state.saved_global_batch != global_batch) {
    // Another global batch (an elastic job's batch changed with its world size): the position is
    // a count of the epoch's samples, so it maps to the whole steps of the new batch that fit in
    // it. The samples of a partial step are seen again; none is skipped.
    if (state.saved_global_batch == 0) throw fail("has train_batch_size 0");
    const uint64_t samples = state.next.step * state.saved_global_batch;
    state.next.step = samples / global_batch;
    state.repeated_samples = samples - state.next.step * global_batch;
  }
  return state;
}

// --resume PATH: a checkpoint folder DIR/TAG (it holds metadata.json) or DIR (its latest).
std::pair<std::string, std::string> split_resume_path(const std::string& path) {
  fs::path p = fs::path(path).lexically_normal();
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();  // a trailing '/'
  if (fs::exists(p / "metadata.json")) {
    const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
    return {dir.string(), p.filename().string()};
  }
  return {p.string(), {}};
}

}  // namespace

std::string host_state(const DataPosition& next, uint64_t seed, uint64_t global_batch) {
  return nlohmann::json{{"epoch", next.epoch},
                        {"step_in_epoch", next.step},
                        {"seed", seed},
                        {"train_batch_size", global_batch}}
      .dump();
}

ResumedState resume(strata::Runtime& runtime, const std::string& path, uint64_t global_batch,
                    uint64_t seed_option) {
  const auto [dir, tag] = split_resume_path(path);
  return resumed_state(runtime, runtime.load(dir, tag), dir, global_batch, seed_option);  // collective
}

ResumedState resumed_state(strata::Runtime& runtime, const strata::LoadResult& loaded, const std::string& dir,
                           uint64_t global_batch, uint64_t seed_option) {
  const std::string where = (fs::path(dir) / loaded.tag).string();
  ResumedState state = parse_host_state(loaded.extra_json, where, global_batch);
  state.global_steps = loaded.global_steps;
  if (runtime.world().rank == 0) {
    std::printf(
        "fashion_mnist: resumed from %s: global step %llu (%llu skipped), epoch %llu step "
        "%llu, seed %llu\n",
        where.c_str(), static_cast<unsigned long long>(loaded.global_steps),
        static_cast<unsigned long long>(loaded.skipped_steps),
        static_cast<unsigned long long>(state.next.epoch + 1),
        static_cast<unsigned long long>(state.next.step),
        static_cast<unsigned long long>(state.seed));
    if (state.saved_global_batch != global_batch) {
        std::printf("fashion_mnist: the checkpoint's global batch %llu is %llu now: its data position maps to "
                    "step %llu of the epoch (%llu samples seen again)\n",
                    static_cast<unsigned long long>(state.saved_global_batch),
                    static_cast<unsigned long long>(global_batch), static_cast<unsigned long long>(state.next.step),
                    static_cast<unsigned long long>(state.repeated_samples));
    }
    if (state.seed != seed_option) {
      std::printf("fashion_mnist: the checkpoint's seed %llu replaces --seed %llu\n",
                  static_cast<unsigned long long>(state.seed),
                  static_cast<unsigned long long>(seed_option));
    }
  }
  return state;
}

}  // namespace strata::fmnist
