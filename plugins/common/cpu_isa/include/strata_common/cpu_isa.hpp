// strata_common/cpu_isa.hpp — which instruction set a plugin's CPU kernels run, chosen once per
// instance: the widest this CPU (and OS) can run, unless the STRATA_CPU_ISA environment variable
// forces one. One variable for every plugin of the tree (the offload optimizer, the amp casts and
// norms, the MPI plugin's shared-memory reductions); each plugin's old variable (STRATA_AMP_ISA,
// STRATA_COMM_ISA) is still honoured when STRATA_CPU_ISA is unset, with a deprecation warning.
//
// The sets are Highway's targets (foreach_target): scalar = EMU128 (portable C++), avx2 = AVX2,
// avx512 = AVX3 (AVX-512 F/VL/DQ/BW). A plugin takes its kernels for a set from Highway's dispatch
// tables (strata_common/highway_slot.hpp), never through the process-wide dispatch target, so that
// two plugins (or two instances) in one process choose independently.
//
// Library strata_common_cpu_isa (plugins/common, never installed). Every function is thread-safe.
#pragma once

#include <optional>
#include <string>

namespace strata::common::cpu {

enum class Isa { scalar, avx2, avx512 };

// The variable every plugin reads.
inline constexpr const char* kIsaVariable = "STRATA_CPU_ISA";

// "scalar", "avx2", "avx512".
const char* isa_name(Isa isa);

// The CPU (and OS) features the set needs that this machine lacks, space-separated; "" when it can
// run the set. avx2 needs every extension Highway compiles its AVX2 target for (SSSE3, SSE4.1/4.2,
// PCLMUL, AES, AVX, AVX2, BMI1/2, FMA, F16C); avx512 those and AVX512 F/VL/DQ/BW. Read with
// __builtin_cpu_supports, which also checks that the OS saves the wide registers (XCR0); not with
// hwy::SupportedTargets(), which in Highway 1.0.3 resets the process-wide dispatch target.
std::string missing_features(Isa isa);

bool isa_available(Isa isa);

// The widest set isa_available() allows.
Isa widest_isa();

// For logs and errors: the relevant features this CPU has, e.g. "avx2 f16c fma bmi2 avx512f ...".
std::string cpu_features();

// Parses a variable's value: NULL, "" or "auto" mean the widest (nullopt). Throws sdk::Error
// (STRATA_ERR_INVALID_ARGUMENT) naming `variable` for anything else.
std::optional<Isa> parse_isa(const char* variable, const char* value);

// One instance's choice and where it came from.
struct IsaChoice {
  Isa isa = Isa::scalar;
  std::string forced_by;    // the variable that forced the set; "" when it is the widest
  std::string deprecation;  // a warning for the plugin to log ("" when none): an old variable
                            // was honoured, or was set but overridden by STRATA_CPU_ISA

  // For the plugin's log line: "avx2 (the widest this CPU has)", "scalar (forced by
  // STRATA_CPU_ISA)".
  std::string describe() const;
};

// Reads STRATA_CPU_ISA and, when it is unset or empty, `legacy_variable` (the plugin's old name;
// NULL for none). Throws sdk::Error: STRATA_ERR_INVALID_ARGUMENT for an unknown name,
// STRATA_ERR_UNSUPPORTED for a set this CPU cannot run; both name the variable that was read.
IsaChoice choose_isa(const char* legacy_variable);

// The same over given values instead of the environment (NULL: unset), for tests.
IsaChoice choose_isa(const char* value, const char* legacy_variable, const char* legacy_value);

}  // namespace strata::common::cpu
