// The bad-input catalogue's training host, written against the C API alone (strata.h): create,
// register two f32 parameters, finalize, step once, destroy. On any failure it prints exactly one
// line, "error: <message>", to stderr and exits 1, which is what a user of a real host would see.
//
// With --device cuda:N (API 1.7) it registers both parameters as CUDA device parameters with fake
// pointers into the unmapped first pages, which crash if anything dereferences them on the host:
// the placement checks at register and finalize must refuse the job before its data is touched.
// --second-device puts the second parameter elsewhere.
//
// With --groups it is an API 1.1 host: gradients registered as NULL, one group per parameter
// ("g0", "g1"), and the step's backward gathers each group FOR_BACKWARD and writes the gradient
// through strata_view_param. Its misuse flags act on that path.
//
// API 1.12: --join-rank R makes rank R call strata_join instead of its one step (the others step,
// then join too).
//
// API 1.9: --deferred registers both parameters without data; --write-group N gathers group N
// FOR_WRITE after finalize, writes 0.5 into every element, releases it, gathers it again and
// checks that it reads 0.5 back (printing "group N reads back what was written").
#include <strata/strata.h>

#include <CLI/CLI.hpp>

#include <cstdint>
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

struct Probe {
  bool groups = false;
  bool touch_ungathered = false;  // read parameter 0 through its view without gathering it
  int64_t gather_group = -1;      // gather this group id before training (may be undefined)
  int diverge_rank = -1;          // this rank gathers the groups in the opposite order
  std::string device = "host";     // where both parameters are: "host" or "cuda:N"
  std::string second_device;       // where the second one is, when not `device`
  bool deferred = false;           // register both without data (API 1.9)
  int64_t write_group = -1;        // write 0.5 into this group through a FOR_WRITE gather
  int join_rank = -1;              // this rank calls strata_join instead of its step (API 1.12)
};

// "host" or "cuda:N".
strata_device parse_device(const std::string& text) {
  if (text == "host") return strata_device{STRATA_DEVICE_HOST, 0};
  if (text.rfind("cuda:", 0) == 0) return strata_device{STRATA_DEVICE_CUDA, std::stoi(text.substr(5))};
  throw Failure{"--device: expected host or cuda:N, got '" + text + "'"};
}

// The two parameters every rank registers; `rename_second` makes this rank's second one differ.
void register_params(strata_runtime* rt, std::vector<std::vector<float>>& storage, bool rename_second,
                     bool null_grads, const Probe& probe) {
  const char* names[2] = {"w0", rename_second ? "w1x" : "w1"};
  storage.assign(4, std::vector<float>(100, 0.01f));  // data and grad for each parameter
  for (int i = 0; i < 2; ++i) {
    strata_param_desc p{};
    p.struct_size = sizeof p;
    p.name = names[i];
    p.dtype = STRATA_F32;
    p.device = parse_device(i == 1 && !probe.second_device.empty() ? probe.second_device
                                                                    : probe.device);
    p.count = storage[2 * i].size();
    p.data = storage[2 * i].data();
    p.grad = null_grads ? nullptr : storage[2 * i + 1].data();
    if (probe.deferred) p.data = nullptr;
    if (p.device.type != STRATA_DEVICE_HOST) {  // fake device pointers: page 1-4, never mapped
      p.data = reinterpret_cast<void*>(uintptr_t{0x1000} * (2 * i + 1));
      p.grad = null_grads ? nullptr : reinterpret_cast<void*>(uintptr_t{0x1000} * (2 * i + 2));
    }
    strata_error err = make_error();
    check(strata_register_param(rt, &p, nullptr, &err), err);
  }
}

void define_groups(strata_runtime* rt) {
  for (uint32_t i = 0; i < 2; ++i) {
    const std::string name = "g" + std::to_string(i);
    strata_error err = make_error();
    check(strata_define_group(rt, name.c_str(), &i, 1, nullptr, &err), err);
  }
}

float* view_data(strata_runtime* rt, uint32_t index, bool want_grad) {
  strata_param_view view{};
  view.struct_size = sizeof view;
  strata_error err = make_error();
  check(strata_view_param(rt, index, &view, &err), err);
  return static_cast<float*>(want_grad ? view.grad : view.data);
}

// What a host that forgot to gather would do: a NULL view is its only warning at stage 3.
void touch_ungathered(strata_runtime* rt) {
  if (view_data(rt, 0, false) == nullptr) {
    throw Failure{"parameter 0 ('w0') is not gathered: strata_view_param returned no data, "
                  "gather its group before touching it"};
  }
}

// Writes 0.5 into group `group` (parameter `group`) through a FOR_WRITE gather, then reads it
// back through an ordinary gather.
void write_and_read_back(strata_runtime* rt, uint32_t group) {
  strata_error err = make_error();
  check(strata_gather(rt, group, STRATA_GATHER_FOR_WRITE, &err), err);
  float* data = view_data(rt, group, false);
  if (data == nullptr) throw Failure{"group gathered for write gave no data"};
  for (int e = 0; e < 100; ++e) data[e] = 0.5f;
  check(strata_release(rt, group, &err), err);
  check(strata_gather(rt, group, 0, &err), err);
  data = view_data(rt, group, false);
  for (int e = 0; e < 100; ++e) {
    if (data == nullptr || data[e] != 0.5f) {
      throw Failure{"group " + std::to_string(group) + " element " + std::to_string(e) +
                    " reads " + (data == nullptr ? std::string("no data") : std::to_string(data[e])) +
                    " after 0.5 was written"};
    }
  }
  check(strata_release(rt, group, &err), err);
  std::printf("group %u reads back what was written\n", group);
}

// One micro-batch's backward: gradient 0.01 into every element, group by group.
void backward_through_groups(strata_runtime* rt, bool reversed) {
  for (uint32_t k = 0; k < 2; ++k) {
    const uint32_t group = reversed ? 1 - k : k;
    strata_error err = make_error();
    check(strata_gather(rt, group, STRATA_GATHER_FOR_BACKWARD, &err), err);
    float* grad = view_data(rt, group, true);
    if (grad == nullptr) throw Failure{"group gathered for backward lent no gradient buffer"};
    for (int e = 0; e < 100; ++e) grad[e] += 0.01f;
    check(strata_release(rt, group, &err), err);
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
  Probe probe;
  app.add_flag("--groups", probe.groups, "API 1.1 host: NULL grads, groups g0 and g1, views");
  app.add_flag("--touch-ungathered", probe.touch_ungathered,
               "read parameter 0 through its view without gathering (with --groups)");
  app.add_option("--gather-group", probe.gather_group, "gather this group id (with --groups)");
  app.add_option("--diverge-rank", probe.diverge_rank,
                 "this rank gathers the groups in the opposite order (with --groups)");
  app.add_option("--device", probe.device, "where the parameters are: host or cuda:N (fake pointers)");
  app.add_option("--second-device", probe.second_device, "where the second parameter is");
  app.add_flag("--deferred", probe.deferred, "register both parameters without data (API 1.9)");
  app.add_option("--write-group", probe.write_group,
                 "write 0.5 into this group through a FOR_WRITE gather and read it back");
  app.add_option("--join-rank", probe.join_rank,
                 "this rank calls strata_join instead of stepping; the others join after their step");
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
    register_params(rt, storage, world.rank == mismatch_rank, probe.groups, probe);
    if (probe.groups) define_groups(rt);
    check(strata_finalize(rt, &err), err);
    if (probe.touch_ungathered) touch_ungathered(rt);
    if (probe.gather_group >= 0) {
      check(strata_gather(rt, static_cast<uint32_t>(probe.gather_group), 0, &err), err);
      check(strata_release(rt, static_cast<uint32_t>(probe.gather_group), &err), err);
    }
    if (probe.write_group >= 0) write_and_read_back(rt, static_cast<uint32_t>(probe.write_group));
    if (probe.groups) backward_through_groups(rt, world.rank == probe.diverge_rank);

    if (world.rank != probe.join_rank) {
      strata_step_result result{};
      result.struct_size = sizeof result;
      check(strata_step(rt, &result, &err), err);
    }
    if (probe.join_rank >= 0) check(strata_join(rt, nullptr, &err), err);
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
