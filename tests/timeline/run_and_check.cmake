# cmake -DWORK=<folder> [-DTIMELINE=<file name in WORK>] [-DEXPECT=<regex>] [-DEXPECT_1..4=<regex>]
#       [-DREJECT=<regex>] [-DCHECK=<checker>] [-DCHECK_ARGS=<args, space-separated>]
#       [-DEXPECT_EXIT=nonzero] -P run_and_check.cmake -- <command> [args...]
#
# Recreates WORK, runs the command there (STRATA_TIMELINE=WORK/TIMELINE when TIMELINE is given) and
# passes only if it exits 0 (with EXPECT_EXIT=nonzero: anything else), its output matches every EXPECT* and not REJECT, and then (with
# TIMELINE) the trace exists, no PATH.rank<R>.part or PATH.rank<R>.json is left beside it, and
# `CHECK <trace> CHECK_ARGS` exits 0.
include(${CMAKE_CURRENT_LIST_DIR}/../catalogue/command_support.cmake)
strata_command_after_separator()
if(NOT command OR NOT DEFINED WORK)
  message(FATAL_ERROR "usage: cmake -DWORK=<folder> ... -P run_and_check.cmake -- <command> [args...]")
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
if(DEFINED TIMELINE)
  set(ENV{STRATA_TIMELINE} "${WORK}/${TIMELINE}")
endif()

execute_process(COMMAND ${command} WORKING_DIRECTORY "${WORK}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE output ERROR_VARIABLE output)
message(STATUS "exit: ${rc}\n${output}")
strata_fail_on_crash_signs("${output}")
if(EXPECT_EXIT STREQUAL "nonzero")  # a check that must catch what the command was made to do
  if(rc EQUAL 0)
    message(FATAL_ERROR "the command exited 0, expected a failure")
  endif()
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "the command exited with ${rc}")
endif()
strata_require_expected("${output}" "output")
if(DEFINED REJECT AND output MATCHES "${REJECT}")
  message(FATAL_ERROR "the output matches what it must not:\n  ${REJECT}")
endif()

if(DEFINED TIMELINE)
  set(trace "${WORK}/${TIMELINE}")
  if(NOT EXISTS "${trace}")
    message(FATAL_ERROR "no timeline at ${trace}")
  endif()
  file(GLOB left "${trace}.rank*" "${trace}.tmp*")
  if(left)
    message(FATAL_ERROR "files left beside the merged timeline: ${left}")
  endif()
  if(DEFINED CHECK)
    separate_arguments(check_args UNIX_COMMAND "${CHECK_ARGS}")
    execute_process(COMMAND ${CHECK} "${trace}" ${check_args} RESULT_VARIABLE check_rc
                    OUTPUT_VARIABLE check_output ERROR_VARIABLE check_output)
    message(STATUS "timeline_check: exit ${check_rc}\n${check_output}")
    if(NOT check_rc EQUAL 0)
      message(FATAL_ERROR "timeline_check failed")
    endif()
  endif()
endif()
