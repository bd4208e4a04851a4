// Training host for the compatibility tests: three f32 parameters (host-owned data and gradient
// buffers) pulled towards fixed targets, g = loss_scale * (tanh(w) - t), for --steps optimizer
// steps through today's libstrata, announcing each gradient (grad_ready). Writes the final
// parameters to --out as hex floats, one per line, so two runs compare exactly.
//   compat_host <manifest> <steps> <out file> [overrides JSON]
#include <strata/strata.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

bool ok(strata_status status, const char* what, const strata_error& err) {
  if (status == STRATA_OK) return true;
  std::fprintf(stderr, "compat_host: %s failed (%d): %s\n", what, static_cast<int>(status), err.message);
  return false;
}

struct Param {
  std::string name;
  std::vector<float> data, grad, target;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: compat_host <manifest> <steps> <out file> [overrides JSON]\n");
    return 2;
  }
  const unsigned long steps = std::stoul(argv[2]);
  strata_error err{};
  err.struct_size = sizeof err;
  strata_create_options options{};
  options.struct_size = sizeof options;
  options.manifest_path = argv[1];
  options.overrides_json = argc == 5 ? argv[4] : nullptr;
  strata_runtime* rt = nullptr;
  if (!ok(strata_create(&options, &rt, &err), "strata_create", err)) return 1;

  std::vector<Param> params;
  const size_t sizes[] = {5, 64, 333};
  for (size_t p = 0; p < 3; ++p) {
    Param param;
    param.name = "w" + std::to_string(p);
    for (size_t i = 0; i < sizes[p]; ++i) {
      const double x = double(i + 1) * (p + 1);
      param.data.push_back(static_cast<float>(std::sin(0.37 * x)));
      param.target.push_back(static_cast<float>(0.5 * std::cos(0.11 * x)));
    }
    param.grad.assign(sizes[p], 0.0f);
    params.push_back(std::move(param));
  }
  bool good = true;
  for (Param& p : params) {
    strata_param_desc d{};
    d.struct_size = sizeof d;
    d.name = p.name.c_str();
    d.dtype = STRATA_F32;
    d.device.type = STRATA_DEVICE_HOST;
    d.count = p.data.size();
    d.data = p.data.data();
    d.grad = p.grad.data();
    good = good && ok(strata_register_param(rt, &d, nullptr, &err), "strata_register_param", err);
  }
  good = good && ok(strata_finalize(rt, &err), "strata_finalize", err);
  for (unsigned long s = 0; good && s < steps; ++s) {
    double scale = 1.0;
    strata_loss_scale(rt, &scale);
    for (uint32_t p = 0; p < params.size(); ++p) {
      Param& param = params[p];
      for (size_t i = 0; i < param.data.size(); ++i) {
        param.grad[i] += static_cast<float>(scale * (std::tanh(double(param.data[i])) - param.target[i]));
      }
      good = good && ok(strata_grad_ready(rt, p, &err), "strata_grad_ready", err);
    }
    strata_step_result result{};
    result.struct_size = sizeof result;
    good = good && ok(strata_step(rt, &result, &err), "strata_step", err);
    if (good && result.outcome != STRATA_STEP_APPLIED) {
      std::fprintf(stderr, "compat_host: step %lu not applied (outcome %d)\n", s + 1, result.outcome);
      good = false;
    }
  }
  strata_destroy(rt);
  if (!good) return 1;

  std::FILE* out = std::fopen(argv[3], "w");
  if (out == nullptr) {
    std::perror(argv[3]);
    return 1;
  }
  for (const Param& p : params) {
    for (float v : p.data) std::fprintf(out, "%s %a\n", p.name.c_str(), double(v));
  }
  std::fclose(out);
  std::printf("compat_host: %lu steps, parameters written to %s\n", steps, argv[3]);
  return 0;
}
