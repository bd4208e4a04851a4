# Issue 11's catalogue cases: ABI 1.3/1.4 tables refused by the loader with a sentence naming what
# is wrong, and plugins built with today's header run by a libstrata that reports an older minor
# (STRATA_EMULATE_ABI_MINOR). Every case is a real run of the probe host under mpirun; the plugins
# are the fixtures of tests/abi (fixtures/fixture_plugin.cpp, fixtures/reporting_offload.cpp).
# Included at the end of CMakeLists.txt (strata_catalogue_case and friends are in scope).
#
# The runtime's exact wording is its own; these regexes ask only for what the message must name.

# The header's minor, so that the cases name today's versions and the one above.
file(STRINGS ${PROJECT_SOURCE_DIR}/plugin-api/include/strata/plugin_api.h abi_minor_line
     REGEX "^#define STRATA_ABI_MINOR [0-9]+")
string(REGEX REPLACE "^#define STRATA_ABI_MINOR ([0-9]+).*" "\\1" abi_minor "${abi_minor_line}")
math(EXPR abi_minor_next "${abi_minor} + 1")
set(abi_now "1\\.${abi_minor}")
set(abi_next "1\\.${abi_minor_next}")

# strata_abi_case(<name> <ranks> <manifest> ERROR|RUNS [EMULATE <minor>] EXPECT <regex>...
#                 [REJECT <regex>]): ERROR cases must fail with an "error: " line, RUNS cases must
# succeed; the output must match every EXPECT regex (at most five) and not REJECT. With EMULATE
# the runtime reports ABI 1.<minor> (STRATA_EMULATE_ABI_MINOR).
function(strata_abi_case name ranks manifest outcome)
  cmake_parse_arguments(ARG "" "EMULATE;REJECT" "EXPECT" ${ARGN})
  set(defines "")
  set(i 0)
  foreach(regex IN LISTS ARG_EXPECT)
    if(i EQUAL 0)
      list(APPEND defines "-DEXPECT=${regex}")
    else()
      list(APPEND defines "-DEXPECT_${i}=${regex}")
    endif()
    math(EXPR i "${i} + 1")
  endforeach()
  if(outcome STREQUAL "ERROR")
    set(script expect_error.cmake)
  else()
    set(script expect_warning.cmake)
    list(APPEND defines "-DREJECT=${ARG_REJECT}")
  endif()
  add_test(NAME catalogue.${name}
    COMMAND ${CMAKE_COMMAND} ${defines} -P ${CMAKE_CURRENT_SOURCE_DIR}/${script} --
            ${STRATA_MPIRUN} -np ${ranks} $<TARGET_FILE:strata_probe_host>
            ${catalogue_manifests}/${manifest})
  set(env "STRATA_PLUGIN_PATH=set:${STRATA_TEST_FIXTURE_DIR}" "STRATA_LOG_LEVEL=set:info")
  if(DEFINED ARG_EMULATE)
    list(APPEND env "STRATA_EMULATE_ABI_MINOR=set:${ARG_EMULATE}")
  else()
    list(APPEND env "STRATA_EMULATE_ABI_MINOR=unset:")
  endif()
  set_tests_properties(catalogue.${name} PROPERTIES
    TIMEOUT 60 LABELS "catalogue;mpi;abi" ENVIRONMENT_MODIFICATION "${env}")
endfunction()

# ---- the loader refuses a table it cannot trust, naming what is wrong ---------------------------
set(fixture_at ": .*libstrata_test_")
# The descriptor's minor is a floor: one above this runtime's needs a newer runtime.
strata_abi_case(abi_floor_above_runtime 1 abi_floor_newer.json ERROR
  EXPECT "abi_floor_newer.json: /offload${fixture_at}abi_minor_newer.so"
         "error: [^\n]*${abi_next}" "error: [^\n]*${abi_now}" "error: [^\n]*(newer|needs|at least)")
# The ops header says the table ends before `step` (56 bytes): smaller than ABI 1.3's offload
# table (64 bytes; both pinned by tests/abi/layout.c).
strata_abi_case(ops_header_too_small 1 ops_header_small.json ERROR
  EXPECT "ops_header_small.json: /offload${fixture_at}small_ops.so"
         "error: [^\n]*[^0-9]56[^0-9]" "error: [^\n]*[^0-9]64([^0-9]|$)")
# The ops header's kind (sharding) is not the descriptor's (offload).
strata_abi_case(ops_header_kind_differs 1 ops_header_kind.json ERROR
  EXPECT "ops_header_kind.json: /offload${fixture_at}header_kind.so"
         "error: [^\n]*header" "error: [^\n]*sharding" "error: [^\n]*offload")
# A required function left NULL: the loader names it.
strata_abi_case(missing_required_function 1 missing_required.json ERROR
  EXPECT "missing_required.json: /sharding${fixture_at}missing_required.so"
         "error: [^\n]*finalize" "error: [^\n]*[Rr]equired")
# Group functions are all five or none: gather without release is refused.
strata_abi_case(partial_group_functions 1 partial_groups.json ERROR
  EXPECT "partial_groups.json: /sharding${fixture_at}partial_groups.so"
         "error: [^\n]*release" "error: [^\n]*(gather|group)")
# A comm whose caps claim reduce_scatter without the function: the bit is ignored (the runtime
# clears it before anyone reads the caps), so stage 3 is refused as for a comm that does not claim
# it: zero refuses at create, seeing no reduce_scatter among the collectives offered.
strata_add_plugin(strata_test_comm_claims_reduce_scatter SOURCES comm_without_reduce_scatter.cpp)
target_compile_definitions(strata_test_comm_claims_reduce_scatter PRIVATE FIXTURE_CLAIM_REDUCE_SCATTER)
set_target_properties(strata_test_comm_claims_reduce_scatter PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${STRATA_TEST_FIXTURE_DIR})
add_dependencies(strata_probe_host strata_test_comm_claims_reduce_scatter)
strata_abi_case(zero_stage3_reduce_scatter_bit_without_function 1
  zero_stage3_claimed_reduce_scatter.json ERROR
  EXPECT "zero_stage3_claimed_reduce_scatter\\.json: /sharding: sharding plugin 'zero' \\([^)]+\\) rejected its config: zero stage 3 needs reduce_scatter and allgather, but the comm stratum offers only: allreduce, allgather, allgatherv, broadcast, barrier")

# ---- today's header against a runtime that reports an older minor ------------------------------
# Floor 1.3 (STRATA_PLUGIN): loads, trains a step and sees the host table of 1.3 (struct_size up to
# account_bytes, no log_enabled) under STRATA_EMULATE_ABI_MINOR=3, and today's table without it.
strata_abi_case(floor3_plugin_runs_on_emulated_minor3 2 floor3_offload.json RUNS EMULATE 3
  EXPECT "reporting-sgd: floor 1\\.3, host ABI 1\\.3, host table struct_size 96, log_enabled absent"
  REJECT "log_enabled present")
strata_abi_case(floor3_plugin_runs_on_this_runtime 2 floor3_offload.json RUNS
  EXPECT "reporting-sgd: floor 1\\.3, host ABI ${abi_now}, host table struct_size [0-9]+, log_enabled present"
  REJECT "log_enabled absent")
# Floor 1.4 (STRATA_PLUGIN_NEEDING(4, ...)): refused by a runtime that reports 1.3, naming both.
strata_abi_case(floor4_plugin_refused_on_emulated_minor3 1 floor4_offload.json ERROR EMULATE 3
  EXPECT "floor4_offload.json: /offload${fixture_at}floor4_offload.so"
         "error: [^\n]*1\\.4" "error: [^\n]*1\\.3" "error: [^\n]*(newer|needs|at least)")
strata_abi_case(floor4_plugin_runs_on_this_runtime 2 floor4_offload.json RUNS
  EXPECT "reporting-sgd: floor 1\\.4, host ABI ${abi_now}, host table struct_size [0-9]+, log_enabled present")
# The real plugins need nothing newer than 1.3 either: the plain probe trains under the emulation.
strata_abi_case(real_plugins_run_on_emulated_minor3 2 good.json RUNS EMULATE 3
  EXPECT "plugins: comm=allreduce-mpi sharding=zero precision=amp offload=offload ")
# Only the minors this runtime can be are accepted (the next minor is the first one above).
strata_abi_case(emulated_minor_out_of_range 1 good.json ERROR EMULATE ${abi_minor_next}
  EXPECT "error: [^\n]*STRATA_EMULATE_ABI_MINOR"
         "error: [^\n]*3[^\n]*${abi_minor}[^\n]*${abi_minor_next}")
