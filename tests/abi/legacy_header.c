/* The frozen 1.0-1.2 header (plugin-api/legacy) compiles on its own as strict C99 at each release
 * it selects, as the plugins built with it were compiled, and says that release's minor. */
#include <strata/plugin_api.h>

#include <stdio.h>

int main(void) {
  if (STRATA_ABI_MAJOR != 1 || STRATA_ABI_MINOR != STRATA_LEGACY_ABI_MINOR) {
    fprintf(stderr, "frozen header says %d.%d, selected 1.%d\n", (int)STRATA_ABI_MAJOR,
            (int)STRATA_ABI_MINOR, (int)STRATA_LEGACY_ABI_MINOR);
    return 1;
  }
  printf("frozen header 1.%d: strata_sharding_ops is %u bytes\n", (int)STRATA_ABI_MINOR,
         (unsigned)sizeof(strata_sharding_ops));
  return 0;
}
