#include "scaler_state.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <strata/plugin.hpp>

namespace strata::amp {
namespace {

using nlohmann::json;

constexpr int kFormat = 1;

const char* dtype_key(strata_dtype dtype) {
  switch (dtype) {
    case STRATA_F16: return "fp16";
    case STRATA_BF16: return "bf16";
    default: return "fp32";
  }
}

const char* mode_of(const PrecisionConfig& config) {
  if (config.model_dtype != STRATA_F16) return "none";
  return config.scaler.static_scale > 0.0 ? "static" : "dynamic";
}

[[noreturn]] void unreadable(const std::string& what) {
  sdk::fail(STRATA_ERR_INVALID_ARGUMENT, "load_state: amp state " + what);
}

const json& member(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end()) unreadable(std::string("has no \"") + key + "\"");
  return *it;
}

std::string text_of(const json& object, const char* key) {
  const json& v = member(object, key);
  if (!v.is_string()) unreadable(std::string("\"") + key + "\": expected a string, got " + v.dump());
  return v.get<std::string>();
}

double number_of(const json& object, const char* key) {
  const json& v = member(object, key);
  if (!v.is_number()) unreadable(std::string("\"") + key + "\": expected a number, got " + v.dump());
  return v.get<double>();
}

int64_t integer_of(const json& object, const char* key) {
  const json& v = member(object, key);
  if (!v.is_number_integer()) {
    unreadable(std::string("\"") + key + "\": expected an integer, got " + v.dump());
  }
  return v.get<int64_t>();
}

json config_json(const PrecisionConfig& config) {
  const LossScalerConfig& c = config.scaler;
  if (c.static_scale > 0.0) return {{"static_scale", c.static_scale}};
  return {{"initial_scale", c.initial_scale},
          {"window", c.window},
          {"hysteresis", c.hysteresis},
          {"consecutive_hysteresis", c.consecutive_hysteresis},
          {"min_scale", c.min_scale}};
}

// "history": [[step, scale, overflow], ...]; optional, and only for messages, so a malformed one
// is refused like any other field rather than guessed at.
std::vector<ScaleRecord> history_of(const json& state) {
  std::vector<ScaleRecord> history;
  const auto it = state.find("history");
  if (it == state.end()) return history;
  if (!it->is_array()) unreadable("\"history\": expected an array, got " + it->dump());
  for (const json& r : *it) {
    if (!r.is_array() || r.size() != 3 || !r[0].is_number_unsigned() || !r[1].is_number() ||
        !r[2].is_boolean()) {
      unreadable("\"history\": expected [step, scale, overflow] records, got " + r.dump());
    }
    history.push_back({r[0].get<uint64_t>(), r[1].get<double>(), r[2].get<bool>()});
  }
  return history;
}

// The job's config against the checkpoint's: differences are kept (the job's config rules) and
// named for the log.
std::vector<std::string> config_differences(const json& saved, const PrecisionConfig& config) {
  std::vector<std::string> notes;
  const json now = config_json(config);
  for (const auto& [key, value] : now.items()) {
    const auto it = saved.find(key);
    if (it != saved.end() && *it != value) {
      notes.push_back("fp16." + key + " is " + value.dump() + " in this job but was " +
                      it->dump() + " in the checkpoint; this job's value is used");
    }
  }
  return notes;
}

}  // namespace

std::string save_scaler_state(const PrecisionConfig& config, const LossScaler& scaler) {
  json state = {{"format", kFormat}, {"dtype", dtype_key(config.model_dtype)},
                {"mode", mode_of(config)}};
  if (config.model_dtype == STRATA_F16) {
    const LossScalerState s = scaler.state();
    state["scale"] = s.scale;
    state["hysteresis"] = s.hysteresis;
    state["iteration"] = s.iteration;
    state["last_overflow"] = s.last_overflow;
    state["config"] = config_json(config);
    json history = json::array();
    for (const ScaleRecord& r : s.history) history.push_back({r.step, r.scale, r.overflow});
    state["history"] = std::move(history);
  }
  return state.dump();  // doubles are written with 17 significant digits: they read back exactly
}

std::vector<std::string> load_scaler_state(std::string_view text, const PrecisionConfig& config,
                                           LossScaler& scaler) {
  const json state = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (state.is_discarded()) unreadable("is not JSON: \"" + std::string(text.substr(0, 80)) + "\"");
  if (!state.is_object()) unreadable("is not a JSON object: " + state.dump().substr(0, 80));
  const int64_t format = integer_of(state, "format");
  if (format != kFormat) {
    unreadable("\"format\" " + std::to_string(format) + ": this plugin reads format " +
               std::to_string(kFormat));
  }
  const std::string dtype = text_of(state, "dtype");
  const std::string mode = text_of(state, "mode");
  if (dtype != dtype_key(config.model_dtype) || mode != mode_of(config)) {
    sdk::fail(STRATA_ERR_MISMATCH,
              "load_state: the checkpoint's precision is " + dtype + " with loss scaling \"" +
                  mode + "\" but this job's is " + dtype_key(config.model_dtype) +
                  " with loss scaling \"" + mode_of(config) +
                  "\"; a loss scaler cannot carry over between them");
  }
  if (config.model_dtype != STRATA_F16) return {};

  LossScalerState s;
  s.scale = number_of(state, "scale");
  s.hysteresis = integer_of(state, "hysteresis");
  s.iteration = integer_of(state, "iteration");
  s.last_overflow = integer_of(state, "last_overflow");
  s.history = history_of(state);
  std::vector<std::string> notes;
  const auto saved_config = state.find("config");
  if (saved_config != state.end()) {
    if (!saved_config->is_object()) {
      unreadable("\"config\": expected an object, got " + saved_config->dump());
    }
    notes = config_differences(*saved_config, config);
  }
  const LossScalerConfig& c = config.scaler;
  if (c.static_scale > 0.0) {
    s.scale = c.static_scale;  // a static scale is config, not state
  } else if (s.hysteresis > c.hysteresis) {
    notes.push_back("the saved hysteresis counter " + std::to_string(s.hysteresis) +
                    " is above this job's fp16.hysteresis; it starts at " +
                    std::to_string(c.hysteresis));
    s.hysteresis = c.hysteresis;
  }
  try {
    scaler.restore(s);
  } catch (const std::invalid_argument& e) {
    unreadable(std::string("field ") + e.what());
  }
  return notes;
}

}  // namespace strata::amp
