/* Compiles the public C headers (plugin_api.h, strata.h) as strict C99, and through
 * c_headers_as_cpp.cpp as C++, and checks the layout facts the ABI rules rely on: struct_size
 * first, STRATA_STRUCT_HAS on a truncated struct, fixed enum values, callable ops tables. */
#include <strata/plugin_api.h>
#include <strata/strata.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);        \
      ++failures;                                                                    \
    }                                                                                \
  } while (0)

static strata_status fixture_create(const strata_plugin_create_args* args, void** self,
                                    strata_error* err) {
  *self = NULL;
  if (args == NULL || !STRATA_STRUCT_HAS(args, strata_plugin_create_args, host)) {
    return STRATA_ERR_INVALID_ARGUMENT;
  }
  if (err != NULL && err->struct_size >= sizeof(strata_error)) {
    err->code = STRATA_ERR_UNSUPPORTED;
    strcpy(err->message, "fixture");
  }
  return STRATA_ERR_UNSUPPORTED;
}

static void fixture_destroy(void* self) { (void)self; }

static const strata_plugin_descriptor* fixture_entry(void) { return NULL; }

/* A table as a C plugin writes it, with the header's initialiser macro; the ABI 1.6 checkpoint
 * functions (state_slots .. load_state) and the 1.8 parameter store are NULL: not supported. */
static const strata_offload_ops fixture_table = {
    STRATA_OPS_HEADER(strata_offload_ops, STRATA_PLUGIN_OFFLOAD), fixture_create, fixture_destroy,
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

int main(void) {
  strata_offload_ops ops;
  strata_plugin_descriptor descriptor;
  strata_error err;
  strata_create_options options;
  strata_param_desc param;
  strata_step_result result;
  strata_memory_report report;
  strata_plugin_create_args create_args;
  strata_coll_args coll;
  strata_host_api host_16;
  strata_plugin_entry_fn entry = fixture_entry;
  void* self = &ops;
  float data[2] = {1.0f, 2.0f};

  memset(&ops, 0, sizeof ops);
  ops.header.struct_size = sizeof ops;
  ops.header.abi_major = STRATA_ABI_MAJOR;
  ops.header.built_minor = STRATA_ABI_MINOR;
  ops.header.kind = STRATA_PLUGIN_OFFLOAD;
  ops.create = fixture_create;
  ops.destroy = fixture_destroy;

  memset(&descriptor, 0, sizeof descriptor);
  descriptor.struct_size = sizeof descriptor;
  descriptor.abi_major = STRATA_ABI_MAJOR;
  descriptor.min_runtime_minor = STRATA_ABI_MINOR_TABLES; /* the floor */
  descriptor.kind = STRATA_PLUGIN_OFFLOAD;
  descriptor.name = "c99";
  descriptor.ops = &ops;
  CHECK(STRATA_STRUCT_HAS(&descriptor, strata_plugin_descriptor, ops));
  descriptor.struct_size = offsetof(strata_plugin_descriptor, kind);
  CHECK(STRATA_STRUCT_HAS(&descriptor, strata_plugin_descriptor, min_runtime_minor));
  CHECK(!STRATA_STRUCT_HAS(&descriptor, strata_plugin_descriptor, kind));

  /* Rule 3: every boundary struct starts with struct_size. */
  CHECK(offsetof(strata_plugin_descriptor, struct_size) == 0);
  CHECK(offsetof(strata_error, struct_size) == 0);
  CHECK(offsetof(strata_host_api, struct_size) == 0);
  CHECK(offsetof(strata_create_options, struct_size) == 0);
  CHECK(offsetof(strata_step_result, struct_size) == 0);
  CHECK(offsetof(strata_plugin_create_args, struct_size) == 0);
  CHECK(offsetof(strata_coll_args, struct_size) == 0);
  CHECK(offsetof(strata_grad_ready_args, struct_size) == 0);
  CHECK(offsetof(strata_group_args, struct_size) == 0);
  CHECK(offsetof(strata_micro_step_args, struct_size) == 0);
  CHECK(offsetof(strata_state_slots, struct_size) == 0);   /* ABI 1.6 */
  CHECK(offsetof(strata_state_io_args, struct_size) == 0); /* ABI 1.6 */
  /* ABI 1.6: a reader handed a 1.5 step args struct sees no lr, momentum or beta2. */
  {
    strata_step_args step_args;
    memset(&step_args, 0, sizeof step_args);
    step_args.struct_size = offsetof(strata_step_args, lr);
    CHECK(STRATA_STRUCT_HAS(&step_args, strata_step_args, lr_factor));
    CHECK(!STRATA_STRUCT_HAS(&step_args, strata_step_args, lr));
    CHECK(!STRATA_STRUCT_HAS(&step_args, strata_step_args, momentum));
    CHECK(!STRATA_STRUCT_HAS(&step_args, strata_step_args, beta2));
  }
  /* ABI 1.3: every ops table starts with a strata_ops_header, which starts with struct_size. */
  CHECK(offsetof(strata_ops_header, struct_size) == 0);
  CHECK(offsetof(strata_comm_ops, header) == 0);
  CHECK(offsetof(strata_sharding_ops, header) == 0);
  CHECK(offsetof(strata_precision_ops, header) == 0);
  CHECK(offsetof(strata_offload_ops, header) == 0);
  CHECK(STRATA_ABI_MINOR_TABLES == 3 && STRATA_ABI_MINOR >= STRATA_ABI_MINOR_TABLES);
  /* Every ops table has create and destroy at the same place: the loader relies on it. */
  CHECK(offsetof(strata_comm_ops, create) == offsetof(strata_offload_ops, create));
  CHECK(offsetof(strata_sharding_ops, destroy) == offsetof(strata_offload_ops, destroy));
  CHECK(offsetof(strata_precision_ops, destroy) == offsetof(strata_offload_ops, destroy));

  CHECK(fixture_table.header.struct_size == sizeof(strata_offload_ops));
  CHECK(fixture_table.header.abi_major == STRATA_ABI_MAJOR);
  CHECK(fixture_table.header.built_minor == STRATA_ABI_MINOR);
  CHECK(fixture_table.header.kind == STRATA_PLUGIN_OFFLOAD && fixture_table.header.reserved == 0);
  CHECK(fixture_table.create == fixture_create && fixture_table.step == NULL);
  CHECK(fixture_table.state_slots == NULL && fixture_table.load_state == NULL);

  /* Values that are part of the ABI and must never be renumbered. */
  CHECK(STRATA_OK == 0 && STRATA_ERR_INVALID_ARGUMENT == 1 && STRATA_ERR_ABI == 8);
  CHECK(STRATA_F32 == 0 && STRATA_BF16 == 2 && STRATA_U8 == 6);
  CHECK(STRATA_PLUGIN_COMM == 1 && STRATA_PLUGIN_OFFLOAD == 4);
  CHECK(STRATA_DTYPE_BIT(STRATA_BF16) == 4u);
  CHECK(strcmp(STRATA_PLUGIN_ENTRY_SYMBOL, "strata_plugin_entry_v1") == 0);
  CHECK(sizeof err.message == STRATA_ERROR_MESSAGE_MAX);

  /* The ops table is callable as a plain C function-pointer table. */
  memset(&err, 0, sizeof err);
  err.struct_size = sizeof err;
  memset(&create_args, 0, sizeof create_args);
  create_args.struct_size = sizeof create_args;
  create_args.config_json = "{}";
  create_args.host = NULL;
  CHECK(ops.create(&create_args, &self, &err) == STRATA_ERR_UNSUPPORTED);
  CHECK(self == NULL && err.code == STRATA_ERR_UNSUPPORTED && strcmp(err.message, "fixture") == 0);
  ops.destroy(self);
  CHECK(entry() == NULL);
  /* A create args struct too small to hold `host` is refused (readers check struct_size). */
  create_args.struct_size = offsetof(strata_plugin_create_args, host);
  CHECK(ops.create(&create_args, &self, &err) == STRATA_ERR_INVALID_ARGUMENT);

  /* Collective arguments: one struct, fields named per collective. */
  memset(&coll, 0, sizeof coll);
  coll.struct_size = sizeof coll;
  coll.op = STRATA_SUM;
  coll.root = 0;
  CHECK(STRATA_STRUCT_HAS(&coll, strata_coll_args, displs));

  /* Host API structs and calls (links libstrata through its C interface). */
  memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.manifest_json = "{}";
  memset(&param, 0, sizeof param);
  param.struct_size = sizeof param;
  param.name = "w";
  param.dtype = STRATA_F32;
  param.device.type = STRATA_DEVICE_HOST;
  param.count = 2;
  param.data = data;
  param.grad = data;
  memset(&result, 0, sizeof result);
  result.struct_size = sizeof result;
  memset(&report, 0, sizeof report);
  report.struct_size = sizeof report;
  CHECK(sizeof report.current / sizeof report.current[0] == STRATA_MEM_CATEGORY_COUNT);
  CHECK(STRATA_API_VERSION_MAJOR == STRATA_ABI_MAJOR);
  /* API 1.7: CUDA device parameters and the host's stream; a NULL runtime is refused, not read. */
  CHECK(STRATA_API_VERSION_MINOR >= 7);
  CHECK(strata_set_stream(NULL, NULL, &err) == STRATA_ERR_INVALID_ARGUMENT);
  /* API 1.8: the library's release, the project's version, as the build that made it says. */
  CHECK(STRATA_API_VERSION_MINOR >= 8);
  CHECK(strcmp(strata_version(), STRATA_VERSION_TEXT) == 0);
  /* API/ABI 1.9: deferred values; FOR_WRITE is a bit of its own beside FOR_BACKWARD. */
  CHECK(STRATA_API_VERSION_MINOR >= 9 && STRATA_ABI_MINOR >= 9);
  CHECK((STRATA_GATHER_FOR_WRITE & STRATA_GATHER_FOR_BACKWARD) == 0);
  /* ABI 1.10: the comm stratum's optional alltoallv and split, the caps' features. A reader
   * handed a 1.3 args struct, a 1.0 caps or a 1.3 comm table sees none of them. */
  CHECK(STRATA_ABI_MINOR >= 10);
  CHECK(STRATA_COLL_ALLTOALLV == 6 && STRATA_COLL_BIT(STRATA_COLL_ALLTOALLV) == 64u);
  CHECK(STRATA_COMM_FEATURE_SPLIT == 1u && STRATA_COMM_SPLIT_NONE == -1);
  {
    strata_comm_caps caps;
    strata_comm_split_args split_args;
    strata_comm_ops comm;
    coll.struct_size = STRATA_COLL_ARGS_SIZE_1_3;
    CHECK(STRATA_STRUCT_HAS(&coll, strata_coll_args, displs));
    CHECK(!STRATA_STRUCT_HAS(&coll, strata_coll_args, send_counts));
    CHECK(!STRATA_STRUCT_HAS(&coll, strata_coll_args, send_displs));
    coll.struct_size = sizeof coll;
    CHECK(STRATA_COLL_ARGS_SIZE_1_10 == sizeof coll);
    CHECK(STRATA_STRUCT_HAS(&coll, strata_coll_args, send_displs));
    memset(&caps, 0, sizeof caps);
    caps.struct_size = STRATA_COMM_CAPS_SIZE_1_0;
    CHECK(STRATA_STRUCT_HAS(&caps, strata_comm_caps, nonblocking));
    CHECK(!STRATA_STRUCT_HAS(&caps, strata_comm_caps, features));
    caps.struct_size = STRATA_COMM_CAPS_SIZE_1_10;
    CHECK(STRATA_STRUCT_HAS(&caps, strata_comm_caps, features));
    memset(&split_args, 0, sizeof split_args);
    split_args.struct_size = sizeof split_args;
    CHECK(STRATA_COMM_SPLIT_ARGS_SIZE_1_10 == sizeof split_args);
    CHECK(offsetof(strata_comm_split_args, struct_size) == 0);
    memset(&comm, 0, sizeof comm);
    comm.header.struct_size = STRATA_COMM_OPS_SIZE_1_3;
    CHECK(STRATA_STRUCT_HAS(&comm.header, strata_comm_ops, test));
    CHECK(!STRATA_STRUCT_HAS(&comm.header, strata_comm_ops, alltoallv));
    CHECK(!STRATA_STRUCT_HAS(&comm.header, strata_comm_ops, split));
    comm.header.struct_size = sizeof comm;
    CHECK(STRATA_COMM_OPS_SIZE_1_10 == sizeof comm);
    CHECK(STRATA_STRUCT_HAS(&comm.header, strata_comm_ops, split));
    CHECK(comm.alltoallv == NULL && comm.split == NULL); /* optional: NULL = not offered */
  }
  /* API 1.10: the loaded library says which API it implements: this header's. */
  CHECK(STRATA_API_VERSION_MINOR >= 10);
  CHECK(strata_api_version() == STRATA_API_VERSION_OF(STRATA_API_VERSION_MAJOR,
                                                      STRATA_API_VERSION_MINOR));
  CHECK(strata_api_version() >> 16 == 1u && (strata_api_version() & 0xffffu) >= 10u);
  /* API 1.11: the manifest's checkpoint block; a NULL runtime is refused, not read. */
  CHECK(STRATA_API_VERSION_MINOR >= 11);
  CHECK(strata_set_host_state(NULL, "{}", &err) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(strata_resumed(NULL, NULL, &err) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(STRATA_SHARDING_WRITABLE_GATHER != STRATA_SHARDING_DEFERRED_VALUES);
  /* API 1.12: uneven data; a NULL runtime is refused, not read. */
  CHECK(STRATA_API_VERSION_MINOR >= 12);
  CHECK(strata_join(NULL, NULL, &err) == STRATA_ERR_INVALID_ARGUMENT);
  /* ABI 1.7: a reader handed a 1.6 host table sees no device() or cuda_stream(). */
  memset(&host_16, 0, sizeof host_16);
  host_16.struct_size = STRATA_HOST_API_SIZE_1_5; /* 1.6 appended no service */
  CHECK(!STRATA_STRUCT_HAS(&host_16, strata_host_api, device));
  CHECK(!STRATA_STRUCT_HAS(&host_16, strata_host_api, cuda_stream));
  host_16.struct_size = sizeof host_16;
  CHECK(STRATA_STRUCT_HAS(&host_16, strata_host_api, cuda_stream));
  CHECK(strata_status_name(STRATA_OK) != NULL);
  CHECK(strata_dtype_name(STRATA_F32) != NULL);

  if (failures == 0) printf("C header checks passed\n");
  return failures == 0 ? 0 : 1;
}
