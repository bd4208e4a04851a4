/* The ctest face of layout.c: its static assertions already held when this linked. Exits 77
 * (skipped) on targets whose layout is not pinned. */
#include <stdio.h>

#include "layout.h"

int main(void) {
  if (!strata_abi_layout_pinned()) {
    printf("ABI layout: not pinned for this target (x86_64 and aarch64 LP64 only): skipped\n");
    return 77;
  }
  printf("ABI layout: every public struct of plugin_api.h and strata.h matches the pinned numbers\n");
  return 0;
}
