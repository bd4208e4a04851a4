# The sharding checks (tools/strata-plugin-check/sharding): strata_zero passes at every stage at
# world sizes 1-4, and a copy with an off-by-one partition fails, naming the check, the step, the
# parameter and element, and the values.
#
# Under the sanitizers (a pass that looks for memory errors; ~30 s a stage there, against ~10 s)
# stage 3 runs (CI time): partitioned parameters gathered by group, and the reduce-scatter path of
# stage 2. Stage 0 is the reference's own code; stage 1's partitioned optimizer state is stage 3's.
if(STRATA_SANITIZE)
  set(sharding_check_stages 3)
else()
  set(sharding_check_stages 0 1 2 3)
endif()
foreach(stage IN LISTS sharding_check_stages)
  strata_plugin_check_test(sharding.zero.stage${stage} LIBRARY $<TARGET_FILE:strata_zero>
    CONFIG "{\"stage\": ${stage}}" NP 4)
endforeach()

# owned_shards hands out the last range one element short: that element is never stepped (nor
# counted in the gradient norm), so the first difference is at step 1. At one rank strata_zero's
# last range is the first parameter registered (its buckets run in reverse registration order):
# 'scalar' keeps its initial 0.5. Stage 2 partitions gradients and masters; 3 ranks partition
# unevenly (the in-tree cases above run 1-4).
strata_plugin_check_fixture(plugin_check_broken_sharding WRAPS strata_zero
  SOURCE fixtures/broken_sharding.cpp)
strata_plugin_check_test(sharding.broken_partition
  LIBRARY $<TARGET_FILE:plugin_check_broken_sharding> CONFIG "{\"stage\": 2}" NP 3
  EXPECT_FAIL
    "FAIL sharding\\.np1\\.steps\\.match_stage0: step 1: parameter 'scalar' element 0 \\(of 1\\): expected 0\\.495[0-9]*, got 0\\.5 "
    "FAIL sharding\\.np3\\.steps\\.match_stage0: rank [0-2]: step 1: parameter '[a-z0-9]+' element [0-9]+ "
    "FAIL sharding\\.np3\\.steps\\.clipping: rank [0-2]: step 1: gradient norm before clipping: expected [0-9.]+, got [0-9.]+"
    "PASS sharding\\.np3\\.caps")

# The ranks started by strata-run's own processes (--backend gloo) instead of mpirun: the checker
# then trains over the comm library strata-run names (STRATA_COMM_LIBRARY, allreduce-gloo).
if(NOT STRATA_SANITIZE)
  strata_plugin_check_test(sharding.zero.stage2.gloo LIBRARY $<TARGET_FILE:strata_zero>
    CONFIG "{\"stage\": 2}" NP 2 ARGS --backend gloo)
endif()
