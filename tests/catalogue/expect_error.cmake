# cmake -DEXPECT=<regex> -P expect_error.cmake -- <command> [args...]
#
# Runs the command and passes only if it exits non-zero, prints an "error: " line, its combined
# output matches EXPECT (a CMake regex), and nothing in the output looks like a crash: a bad input
# must end in one readable sentence, never a signal, an uncaught exception or a sanitizer report.
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
  message(FATAL_ERROR "usage: cmake -DEXPECT=<regex> -P expect_error.cmake -- <command> [args...]")
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
if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the command did not exit normally: ${rc}")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "the command succeeded, but an error was expected")
endif()
if(NOT output MATCHES "(^|\n)error: ")
  message(FATAL_ERROR "no 'error: ' line in the output")
endif()
if(NOT output MATCHES "${EXPECT}")
  message(FATAL_ERROR "the output does not match the expected error:\n  ${EXPECT}")
endif()
