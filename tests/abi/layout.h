/* layout.c pins the public structs' layout at compile time; this says whether it did. */
#ifndef STRATA_TESTS_ABI_LAYOUT_H
#define STRATA_TESTS_ABI_LAYOUT_H

/* 1 if layout.c asserted the pinned numbers (x86_64 or aarch64, LP64), 0 on other targets. */
int strata_abi_layout_pinned(void);

#endif
