/* The frozen 1.0-1.2 header (plugin-api/legacy) compiles on its own as strict C99 at each release
 * it selects, as the plugins built with it were compiled, and gives that release's layouts: the
 * sizes below are those of the headers 1.0, 1.1 and 1.2 as released (1.1: git 533afb6~1), pinned
 * as literal numbers so that an edit to the frozen text that moves a layout fails here. */
#include <strata/plugin_api.h>

#include <stdio.h>

struct released_sizes {
  size_t host_api, comm_ops, sharding_ops, precision_ops, offload_ops, shard;
};

static const struct released_sizes kReleased[3] = {
    {80, 96, 88, 64, 48, 48},   /* 1.0 */
    {80, 96, 128, 64, 48, 48},  /* 1.1: the sharding table's group functions */
    {96, 96, 128, 64, 48, 64},  /* 1.2: memory locations, the shard's model copy fields */
};

static int check(const char* what, size_t got, size_t released) {
  if (got == released) return 0;
  fprintf(stderr, "1.%d %s is %u bytes, released as %u\n", (int)STRATA_LEGACY_ABI_MINOR, what,
          (unsigned)got, (unsigned)released);
  return 1;
}

int main(void) {
  const struct released_sizes* r = &kReleased[STRATA_LEGACY_ABI_MINOR];
  int failed = STRATA_ABI_MAJOR != 1;
  failed |= check("strata_host_api", sizeof(strata_host_api), r->host_api);
  failed |= check("strata_comm_ops", sizeof(strata_comm_ops), r->comm_ops);
  failed |= check("strata_sharding_ops", sizeof(strata_sharding_ops), r->sharding_ops);
  failed |= check("strata_precision_ops", sizeof(strata_precision_ops), r->precision_ops);
  failed |= check("strata_offload_ops", sizeof(strata_offload_ops), r->offload_ops);
  failed |= check("strata_shard", sizeof(strata_shard), r->shard);
  if (failed) return 1;
  printf("frozen header 1.%d: the released layouts\n", (int)STRATA_ABI_MINOR);
  return 0;
}
