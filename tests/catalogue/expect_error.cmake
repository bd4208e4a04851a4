# cmake -DEXPECT=<regex> [-DEXPECT_1=<regex> .. -DEXPECT_4=<regex>] -P expect_error.cmake --
#       <command> [args...]
#
# Runs the command and passes only if it exits non-zero, prints an "error: " line, its combined
# output matches EXPECT and every EXPECT_<n> given (CMake regexes), and nothing in the output looks
# like a crash: a bad input must end in one readable sentence, never a signal, an uncaught
# exception or a sanitizer report.
include(${CMAKE_CURRENT_LIST_DIR}/command_support.cmake)
strata_command_after_separator()
if(NOT command OR NOT DEFINED EXPECT)
  message(FATAL_ERROR "usage: cmake -DEXPECT=<regex> -P expect_error.cmake -- <command> [args...]")
endif()

execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE output ERROR_VARIABLE output)
message(STATUS "exit: ${rc}\n${output}")

strata_fail_on_crash_signs("${output}")
if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the command did not exit normally: ${rc}")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "the command succeeded, but an error was expected")
endif()
if(NOT output MATCHES "(^|\n)error: ")
  message(FATAL_ERROR "no 'error: ' line in the output")
endif()
strata_require_expected("${output}" "error")
