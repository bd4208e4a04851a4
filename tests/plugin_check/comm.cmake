# The comm checks (tools/strata-plugin-check/comm) at world sizes 1-4: both in-tree comm plugins
# pass with their default config (Gloo bootstraps from the MASTER_ADDR/MASTER_PORT/RANK/... that
# strata-run gives every rank), and a copy of allreduce-mpi whose allreduce computes MIN for MAX
# fails allreduce.<dtype>.max at 2 ranks and more, naming the first differing element; at 1 rank
# MIN and MAX agree, so np1 passes.
strata_plugin_check_test(comm_allreduce_mpi LIBRARY $<TARGET_FILE:strata_allreduce_mpi> NP 4)
# Gloo's collectives cost ~10 ms each here at 4 ranks on 2 cores whatever their size (allreduce-mpi:
# well under 1 ms), so its run is latency-bound: 21-29 s at -np 4 in a RelWithDebInfo build, 35 s
# at -np 3 under ASan+UBSan. The sanitizer pass leaves it out (CI time): the same plugin's
# conformance tests run there (tests/plugins/allreduce, comm_gloo_np*), and the checker's comm code runs there
# against allreduce-mpi.
if(NOT STRATA_SANITIZE)
  strata_plugin_check_test(comm_allreduce_gloo LIBRARY $<TARGET_FILE:strata_allreduce_gloo> NP 4)
endif()

# The sanitizer pass leaves the broken copy out too (CI time, 33 s there): what it shows is that
# the checks catch a wrong reduction, which the plain pass shows; the failure-reporting code runs
# under the sanitizers with the other strata's broken copies.
if(NOT STRATA_SANITIZE)
  strata_plugin_check_fixture(plugin_check_broken_comm WRAPS strata_allreduce_mpi
    SOURCE fixtures/broken_comm.cpp)
  strata_plugin_check_test(broken_comm LIBRARY $<TARGET_FILE:plugin_check_broken_comm> NP 4
    EXPECT_FAIL
      "PASS comm\\.np1\\.allreduce\\.f32\\.max"
      "FAIL comm\\.np2\\.allreduce\\.f32\\.max: rank [01]: count 1, blocking, in place: element 0: expected -?[0-9]+, got -?[0-9]+"
      "FAIL comm\\.np4\\.allreduce\\.i32\\.max: rank [0-3]: count 1, blocking, in place: element 0: expected"
      "FAIL comm\\.np3\\.nonblocking\\.ordering: rank [0-2]: allreduce max of 7 \\(started #1, waited #1\\): element [0-9]+: expected"
      "PASS comm\\.np4\\.allreduce\\.f32\\.min")
endif()
