# Shared by the catalogue's -P scripts (expect_error, expect_warning, hardening_case).

# Sets `command` in the caller to the arguments after "--".
macro(strata_command_after_separator)
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
endmacro()

# Fails if `output` looks like a crash: a bad input must end in one readable sentence, never a
# signal, an uncaught exception or a sanitizer report.
function(strata_fail_on_crash_signs output)
  set(crash_signs "Segmentation fault" "terminate called" "AddressSanitizer" "LeakSanitizer"
      "UndefinedBehaviorSanitizer" "runtime error:" "core dumped" "Aborted" "exited on signal")
  foreach(sign IN LISTS crash_signs)
    string(FIND "${output}" "${sign}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "the output looks like a crash ('${sign}')")
    endif()
  endforeach()
endfunction()

# Fails unless `output` matches EXPECT and each of EXPECT_1 .. EXPECT_4 that is defined (CMake
# regexes; several when one message must name things whose order is not fixed).
function(strata_require_expected output what)
  foreach(var EXPECT EXPECT_1 EXPECT_2 EXPECT_3 EXPECT_4)
    if(DEFINED ${var} AND NOT output MATCHES "${${var}}")
      message(FATAL_ERROR "the output does not match the expected ${what}:\n  ${${var}}")
    endif()
  endforeach()
endfunction()
