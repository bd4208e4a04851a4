# cmake -DEXPECT=<regex> [-DEXPECT_1=<regex> .. -DEXPECT_4=<regex>] [-DREJECT=<regex>]
#       -P expect_warning.cmake -- <command> [args...]
#
# The counterpart of expect_error.cmake for inputs that are accepted with a warning: passes only if
# the command exits 0, its combined output matches EXPECT and every EXPECT_<n> given (CMake
# regexes), does not match REJECT (when given), and nothing in it looks like a crash.
include(${CMAKE_CURRENT_LIST_DIR}/command_support.cmake)
strata_command_after_separator()
if(NOT command OR NOT DEFINED EXPECT)
  message(FATAL_ERROR "usage: cmake -DEXPECT=<regex> [-DREJECT=<regex>] -P expect_warning.cmake -- <command> [args...]")
endif()

execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE output ERROR_VARIABLE output)
message(STATUS "exit: ${rc}\n${output}")

strata_fail_on_crash_signs("${output}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the command failed (${rc}), but it should have succeeded with a warning")
endif()
strata_require_expected("${output}" "warning")
if(DEFINED REJECT AND NOT REJECT STREQUAL "" AND output MATCHES "${REJECT}")
  message(FATAL_ERROR "the output contains what it must not:\n  ${REJECT}")
endif()
