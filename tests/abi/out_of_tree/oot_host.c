/* A third party's C training host: one f32 parameter, one step, with the offload stratum set to
 * the out-of-tree plugin whose path is argv[1]. Exits non-zero unless p == p0 - lr * g. */
#include <strata/strata.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#define COUNT 4

static int check(strata_status status, const char* what, const strata_error* err) {
  if (status == STRATA_OK) return 1;
  fprintf(stderr, "oot_host: %s failed: %s\n", what, err->message);
  return 0;
}

int main(int argc, char** argv) {
  const double lr = 0.5;
  const float start[COUNT] = {1.0f, 2.0f, -3.0f, 4.0f};
  const float gradient[COUNT] = {0.5f, -1.0f, 0.25f, 2.0f};
  float data[COUNT], grad[COUNT];
  char manifest[4096];
  strata_create_options options;
  strata_param_desc param;
  strata_step_result result;
  strata_runtime* rt = NULL;
  strata_error err;
  int ok = 1, i;

  if (argc != 2) {
    fprintf(stderr, "usage: oot_host <path to libmy_sgd.so>\n");
    return 2;
  }
  snprintf(manifest, sizeof manifest,
           "{\"train_micro_batch_size_per_gpu\": 1,"
           " \"optimizer\": {\"type\": \"SGD\", \"params\": {\"lr\": %g}},"
           " \"offload\": {\"library\": \"%s\"}}",
           lr, argv[1]);

  memset(&err, 0, sizeof err);
  err.struct_size = sizeof err;
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.manifest_json = manifest;
  if (!check(strata_create(&options, &rt, &err), "strata_create", &err)) return 1;

  memcpy(data, start, sizeof data);
  memset(grad, 0, sizeof grad);
  memset(&param, 0, sizeof param);
  param.struct_size = sizeof param;
  param.name = "w";
  param.dtype = STRATA_F32;
  param.device.type = STRATA_DEVICE_HOST;
  param.count = COUNT;
  param.data = data;
  param.grad = grad;
  memset(&result, 0, sizeof result);
  result.struct_size = sizeof result;

  ok = check(strata_register_param(rt, &param, NULL, &err), "strata_register_param", &err) &&
       check(strata_finalize(rt, &err), "strata_finalize", &err);
  /* The "backward pass": gradients are written after finalize, as in a training loop. */
  memcpy(grad, gradient, sizeof grad);
  ok = ok && check(strata_step(rt, &result, &err), "strata_step", &err);
  if (ok && result.outcome != STRATA_STEP_APPLIED) {
    fprintf(stderr, "oot_host: step outcome %d, expected applied\n", (int)result.outcome);
    ok = 0;
  }
  for (i = 0; ok && i < COUNT; ++i) {
    const double want = start[i] - lr * gradient[i];
    if (fabs(data[i] - want) > 1e-6) {
      fprintf(stderr, "oot_host: w[%d] = %.9g after one step, expected %.9g\n", i, data[i], want);
      ok = 0;
    }
  }
  strata_destroy(rt);
  if (ok) printf("oot_host: SGD update matches (%d elements)\n", COUNT);
  return ok ? 0 : 1;
}
