// Which instruction set the optimizer kernels run: the widest this CPU has, unless the
// STRATA_CPU_ISA environment variable (scalar | avx2 | avx512) forces one. The choice is
// Highway's process-wide dispatch state, so it holds for every kernel call after it.
#pragma once

#include <optional>
#include <string>

namespace strata::offload {

// scalar: Highway's portable target (plain C++ the compiler may vectorise with SSE2).
// avx2: AVX2 + FMA + F16C. avx512: AVX-512 F/VL/DQ/BW.
enum class CpuIsa { scalar, avx2, avx512 };

inline constexpr const char* kCpuIsaVariable = "STRATA_CPU_ISA";

const char* cpu_isa_name(CpuIsa isa);

// Whether this CPU can run the path (this build has all three).
bool cpu_isa_supported(CpuIsa isa);

// The widest path cpu_isa_supported() allows.
CpuIsa widest_cpu_isa();

// Makes the kernels run `isa`, or the widest path when nullopt. Throws sdk::Error
// (STRATA_ERR_UNSUPPORTED) naming STRATA_CPU_ISA when the CPU lacks the path.
void use_cpu_isa(std::optional<CpuIsa> isa);

// Parses a STRATA_CPU_ISA value: NULL, "" or "auto" mean the widest (nullopt). Throws
// sdk::Error (STRATA_ERR_INVALID_ARGUMENT) naming the variable for anything else.
std::optional<CpuIsa> parse_cpu_isa(const char* value);

// Reads STRATA_CPU_ISA, applies it with use_cpu_isa() and says what it did, for the log, e.g.
// "avx2 (the widest this CPU has)" or "scalar (forced by STRATA_CPU_ISA)".
std::string select_cpu_isa_from_env();

// The path the kernels dispatch to now, as reported by the dispatched code itself.
CpuIsa active_cpu_isa();

}  // namespace strata::offload
