# cmake -DEXPECT=<regex> [-DREJECT=<regex>] -P expect_warning.cmake -- <command> [args...]
#
# The counterpart of expect_error.cmake for inputs that are accepted with a warning: passes only if
# the command exits 0, its combined output matches EXPECT (a CMake regex), does not match REJECT
# (when given), and nothing in it looks like a crash.
set(command "")
set(after_separator OFF)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE 1 ${last})
  if(after_separator)
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif(CMAKE_ARGV${i} STREQUAL "--")
    set(after_separator ON)
  endif()
endforeach()
if(NOT command OR NOT DEFINED EXPECT)
  message(FATAL_ERROR "usage: cmake -DEXPECT=<regex> [-DREJECT=<regex>] -P expect_warning.cmake -- <command> [args...]")
endif()

execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE output ERROR_VARIABLE output)
message(STATUS "exit: ${rc}\n${output}")

set(crash_signs "Segmentation fault" "terminate called" "AddressSanitizer" "LeakSanitizer"
    "UndefinedBehaviorSanitizer" "runtime error:" "core dumped" "Aborted" "exited on signal")
foreach(sign IN LISTS crash_signs)
  string(FIND "${output}" "${sign}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "the output looks like a crash ('${sign}')")
  endif()
endforeach()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the command failed (${rc}), but it should have succeeded with a warning")
endif()
if(NOT output MATCHES "${EXPECT}")
  message(FATAL_ERROR "the output does not contain the expected warning:\n  ${EXPECT}")
endif()
if(DEFINED REJECT AND NOT REJECT STREQUAL "" AND output MATCHES "${REJECT}")
  message(FATAL_ERROR "the output contains what it must not:\n  ${REJECT}")
endif()
