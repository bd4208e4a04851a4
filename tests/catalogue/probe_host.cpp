// The bad-input catalogue's training host, written against the C API alone (strata.h): create,
// register two f32 parameters, finalize, step once, destroy. On any failure it prints exactly one
// line, "error: <message>", to stderr and exits 1, which is what a user of a real host would see.
#include <strata/strata.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace {

struct Failure {
  std::string message;
};

void check(strata_status status, const strata_error& err) {
  if (status != STRATA_OK) throw Failure{err.message};
}

strata_error make_error() {
  strata_error err{};
  err.struct_size = sizeof err;
  return err;
}

// The two parameters every rank registers; `rename_second` makes this rank's second one differ.
void register_params(strata_runtime* rt, std::vector<std::vector<float>>& storage, bool rename_second) {
  const char* names[2] = {"w0", rename_second ? "w1x" : "w1"};
  storage.assign(4, std::vector<float>(100, 0.01f));  // data and grad for each parameter
  for (int i = 0; i < 2; ++i) {
    strata_param_desc p{};
    p.struct_size = sizeof p;
    p.name = names[i];
    p.dtype = STRATA_F32;
    p.device = strata_device{STRATA_DEVICE_HOST, 0};
    p.count = storage[2 * i].size();
    p.data = storage[2 * i].data();
    p.grad = storage[2 * i + 1].data();
    strata_error err = make_error();
    check(strata_register_param(rt, &p, nullptr, &err), err);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string manifest;
  std::string overrides;
  int mismatch_rank = -1;
  CLI::App app{"Strata bad-input probe: create, register two params, finalize, step, destroy"};
  app.add_option("manifest", manifest, "manifest file")->required();
  app.add_option("--overrides", overrides, "JSON merge patch applied over the manifest");
  app.add_option("--mismatch-rank", mismatch_rank,
                 "this rank registers a differently named second parameter");
  CLI11_PARSE(app, argc, argv);

  strata_runtime* rt = nullptr;
  try {
    strata_create_options options{};
    options.struct_size = sizeof options;
    options.manifest_path = manifest.c_str();
    options.overrides_json = overrides.empty() ? nullptr : overrides.c_str();
    strata_error err = make_error();
    check(strata_create(&options, &rt, &err), err);

    strata_world_info world{};
    world.struct_size = sizeof world;
    strata_world(rt, &world);
    std::vector<std::vector<float>> storage;
    register_params(rt, storage, world.rank == mismatch_rank);
    check(strata_finalize(rt, &err), err);

    strata_step_result result{};
    result.struct_size = sizeof result;
    check(strata_step(rt, &result, &err), err);
    strata_destroy(rt);
    return 0;
  } catch (const Failure& failure) {
    std::fprintf(stderr, "error: %s\n", failure.message.c_str());
    // Every catalogue failure after create is collective (all ranks fail alike), so tearing
    // down is safe, and it lets the comm transport shut down cleanly.
    strata_destroy(rt);
    return 1;
  }
}
