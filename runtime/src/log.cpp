// The runtime's spdlog logger: stderr, one line per message, tagged with the rank.
#include "log.hpp"

#include <spdlog/sinks/stdout_sinks.h>

#include <array>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

namespace strata::rt {
namespace {

std::string pattern_for(const std::string& rank) { return "[strata rank " + rank + "] [%l] %v"; }

struct LevelName {
  std::string_view name;
  spdlog::level::level_enum level;
};

// spdlog::level::from_str maps unknown names to "off", which would silence a typo; parse here.
constexpr std::array<LevelName, 9> kLevels{{{"trace", spdlog::level::trace},
                                            {"debug", spdlog::level::debug},
                                            {"info", spdlog::level::info},
                                            {"warn", spdlog::level::warn},
                                            {"warning", spdlog::level::warn},
                                            {"error", spdlog::level::err},
                                            {"err", spdlog::level::err},
                                            {"critical", spdlog::level::critical},
                                            {"off", spdlog::level::off}}};

// Until the comm stratum reports the rank, use what the launcher put in the environment (mpirun,
// PMI, torchrun-style launchers), so start-up lines from several ranks can be told apart.
std::string rank_from_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "RANK", "SLURM_PROCID"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && *value != '\0') return value;
  }
  return "?";
}

std::shared_ptr<spdlog::logger> make_logger() {
  // Not registered with spdlog's global registry: the host may have its own logger named "strata".
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto log = std::make_shared<spdlog::logger>("strata", std::move(sink));
  log->set_pattern(pattern_for(rank_from_launcher()));
  log->set_level(spdlog::level::info);

  const char* env = std::getenv("STRATA_LOG_LEVEL");
  if (env != nullptr && *env != '\0') {
    bool known = false;
    for (const auto& entry : kLevels) {
      if (entry.name == env) {
        log->set_level(entry.level);
        known = true;
      }
    }
    if (!known) {
      log->warn("STRATA_LOG_LEVEL: expected trace, debug, info, warn, error or off, got '{}'; using info",
                env);
    }
  }
  return log;
}

}  // namespace

spdlog::logger& logger() {
  // Never destroyed: the watchdog thread may still log while the process exits (a host that
  // returns from main without destroying its runtime).
  static const auto* instance = new std::shared_ptr<spdlog::logger>(make_logger());
  return **instance;
}

void set_log_rank(int rank) { logger().set_pattern(pattern_for(std::to_string(rank))); }

}  // namespace strata::rt
