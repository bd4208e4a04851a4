// libFuzzer target: load_manifest on arbitrary text. Whatever the bytes, the only way out is a
// manifest or a strata::rt::Error: a crash, a sanitizer report, a hang or any other exception is
// a bug. The input up to its first NUL is the manifest; what follows it, if anything, is the
// overrides merge patch (so both texts and their merge are fuzzed).
#include "error.hpp"
#include "log.hpp"
#include "manifest/manifest.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // Unknown-key warnings for every input would drown the fuzzer's own output.
  strata::rt::logger().set_level(spdlog::level::off);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string manifest = input.substr(0, nul);
  const std::string overrides = nul == std::string::npos ? "" : input.substr(nul + 1);

  strata_create_options options{};
  options.struct_size = sizeof options;
  options.manifest_json = manifest.c_str();
  options.base_dir = "/nonexistent-fuzz-base";  // never touched: no plugin is loaded here
  options.overrides_json = nul == std::string::npos ? nullptr : overrides.c_str();
  try {
    const strata::rt::Manifest m = strata::rt::load_manifest(options);
    // Touch what the engine reads next, as it would: the composed plugin configs go out as text.
    for (const strata::rt::StratumSpec* s : {&m.comm, &m.sharding, &m.precision, &m.offload}) {
      (void)s->config.dump();
    }
  } catch (const strata::rt::Error&) {
    // The expected outcome for almost every input: one sentence naming what is wrong.
  }
  return 0;
}
