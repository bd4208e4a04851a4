// strata/cpu_threads.hpp — header-only: how many CPU threads a plugin's host-side loops use.
//
// Every rank on a node runs its own loops (the optimizer step, precision casts) at the same time,
// so one rank taking every hardware thread oversubscribes the node N times over. The rule, shared
// by strata_offload and strata_amp so that both agree:
//   1. STRATA_CPU_THREADS, when set: Strata's own knob, wins;
//   2. else OMP_NUM_THREADS, when set: what launchers (torchrun, mpirun setups) already export
//      per rank (a list such as "8,2" gives the outer level, its first number);
//   3. else the host's hardware threads divided by the ranks on this node (the comm stratum's
//      local_size), at least 1.
// A set but bad value is an error naming the variable and what it expects.
#pragma once

#include <strata/plugin.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string>
#include <thread>

namespace strata::sdk {

inline constexpr const char* kCpuThreadsVariable = "STRATA_CPU_THREADS";
inline constexpr const char* kOmpThreadsVariable = "OMP_NUM_THREADS";
inline constexpr long kMaxCpuThreads = 4096;

struct CpuThreads {
  unsigned count = 1;
  std::string source;  // why this count, for the log line
};

namespace detail {

// `text` (the whole of it, or up to the first ',' when `list` is true) as a count in
// [1, kMaxCpuThreads], else an error naming `variable`.
inline unsigned parse_thread_count(const char* variable, const char* text, bool list) {
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(text, &end, 10);
  const bool ends_well = end != text && (*end == '\0' || (list && *end == ','));
  if (errno != 0 || !ends_well || n < 1 || n > kMaxCpuThreads) {
    fail(STRATA_ERR_INVALID_ARGUMENT,
         std::string(variable) + ": expected a thread count from 1 to " +
             std::to_string(kMaxCpuThreads) + (list ? " (or a list of them)" : "") + ", got '" +
             text + "'");
  }
  return static_cast<unsigned>(n);
}

inline bool set(const char* value) { return value != nullptr && *value != '\0'; }

}  // namespace detail

// The rule above as a pure function: the two variables' values (NULL or empty: unset), the
// host's hardware threads (0: unknown, taken as 1) and the ranks on this node.
inline CpuThreads choose_cpu_threads(const char* strata_value, const char* omp_value,
                                     unsigned hardware_threads, int local_size) {
  if (detail::set(strata_value)) {
    return {detail::parse_thread_count(kCpuThreadsVariable, strata_value, false),
            std::string("from ") + kCpuThreadsVariable};
  }
  if (detail::set(omp_value)) {
    return {detail::parse_thread_count(kOmpThreadsVariable, omp_value, true),
            std::string("from ") + kOmpThreadsVariable};
  }
  const unsigned hardware = std::max(1u, hardware_threads);
  const unsigned ranks = static_cast<unsigned>(std::max(1, local_size));
  return {std::max(1u, hardware / ranks), std::to_string(hardware) + " hardware threads / " +
                                              std::to_string(ranks) + " ranks on this node"};
}

// Ranks on this node, from the comm stratum (1 without one, e.g. a single-process test host).
inline int local_ranks(const strata_host_api* host) {
  if (host == nullptr || host->comm == nullptr || host->comm->query == nullptr) return 1;
  strata_comm_caps caps{};
  caps.struct_size = sizeof caps;
  strata_error err = make_error();
  if (host->comm->query(host->comm_self, &caps, &err) != STRATA_OK) return 1;
  return std::max(1, caps.local_size);
}

// The rule for this process: reads the environment and asks the comm stratum.
inline CpuThreads cpu_threads(const strata_host_api* host) {
  return choose_cpu_threads(std::getenv(kCpuThreadsVariable), std::getenv(kOmpThreadsVariable),
                            std::thread::hardware_concurrency(), local_ranks(host));
}

}  // namespace strata::sdk
