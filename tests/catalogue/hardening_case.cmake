# cmake -DCASE=<setup> -DWORK=<folder> -DEXPECT=<regex> [-DPLUGIN=<real plugin>]
#       [-DFIXTURE=<strata_elf_fixture>] -P hardening_case.cmake -- <probe command> [args...]
#
# The catalogue cases whose bad input cannot be a committed file: a plugin that is a directory,
# text, another machine's ELF, a truncated or world-writable copy, a world-writable folder, a
# manifest too large or too deep to commit. It builds the input in WORK at test time, writes a
# manifest there naming it, then runs expect_error.cmake on "<probe command> WORK/manifest.json".
include(${CMAKE_CURRENT_LIST_DIR}/command_support.cmake)
strata_command_after_separator()
if(NOT command OR NOT DEFINED CASE OR NOT DEFINED WORK OR NOT DEFINED EXPECT)
  message(FATAL_ERROR "usage: cmake -DCASE=.. -DWORK=.. -DEXPECT=.. -P hardening_case.cmake -- <command>")
endif()

# A folder left world-writable by an earlier run must be made removable first.
if(EXISTS "${WORK}/open")
  file(CHMOD "${WORK}/open" DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")

set(library "./plugin.so")
set(body "\"train_micro_batch_size_per_gpu\": 1, \"optimizer\": {\"type\": \"SGD\", \"params\": {\"lr\": 0.1}}")
macro(run_fixture)
  execute_process(COMMAND "${FIXTURE}" ${ARGN} RESULT_VARIABLE fixture_rc)
  if(NOT fixture_rc EQUAL 0)
    message(FATAL_ERROR "strata_elf_fixture ${ARGN} failed: ${fixture_rc}")
  endif()
endmacro()

if(CASE STREQUAL "directory")
  file(MAKE_DIRECTORY "${WORK}/plugin.so")
elseif(CASE STREQUAL "text")
  file(WRITE "${WORK}/plugin.so" "This is not a shared library.\n")
elseif(CASE MATCHES "^(elf32|big-endian|other-machine)$")
  run_fixture(${CASE} "${WORK}/plugin.so")
elseif(CASE STREQUAL "truncated")
  run_fixture(truncate "${PLUGIN}" "${WORK}/plugin.so")
elseif(CASE STREQUAL "world-writable-file")
  file(COPY_FILE "${PLUGIN}" "${WORK}/plugin.so")
  file(CHMOD "${WORK}/plugin.so" PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ GROUP_WRITE
       WORLD_READ WORLD_WRITE)
elseif(CASE STREQUAL "world-writable-folder")
  file(MAKE_DIRECTORY "${WORK}/open")
  file(COPY_FILE "${PLUGIN}" "${WORK}/open/plugin.so")
  file(CHMOD "${WORK}/open" DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
       GROUP_READ GROUP_WRITE GROUP_EXECUTE WORLD_READ WORLD_WRITE WORLD_EXECUTE)
  set(library "./open/plugin.so")
elseif(CASE STREQUAL "too-large")
  # 17 MiB of a string value, past the 16 MiB limit.
  string(REPEAT "a" 17825792 filler)
  set(body "${body}, \"scheduler\": {\"type\": \"${filler}\"}")
elseif(CASE STREQUAL "very-deep")
  # A million levels: a recursive parser would overflow its stack long before the end.
  string(REPEAT "[" 1000000 open)
  string(REPEAT "]" 1000000 close)
  set(body "${body}, \"zero_optimization\": {\"stage\": ${open}${close}}")
else()
  message(FATAL_ERROR "unknown CASE '${CASE}'")
endif()
file(WRITE "${WORK}/manifest.json" "{${body}, \"offload\": {\"library\": \"${library}\"}}\n")

execute_process(
  COMMAND ${CMAKE_COMMAND} "-DEXPECT=${EXPECT}" -P ${CMAKE_CURRENT_LIST_DIR}/expect_error.cmake --
          ${command} "${WORK}/manifest.json"
  RESULT_VARIABLE rc OUTPUT_VARIABLE output ERROR_VARIABLE output)
message(STATUS "${output}")

# Leave no world-writable folder behind in the build tree.
if(EXISTS "${WORK}/open")
  file(CHMOD "${WORK}/open" DIRECTORY_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
endif()
file(REMOVE_RECURSE "${WORK}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "expect_error.cmake failed (see above)")
endif()
