# Runs one multi-rank command (cmake -P) and checks both its exit status and its log: the command
# must exit 0 and the output (stdout and stderr together) must hold exactly COUNT matches of
# REGEX. ctest's PASS_REGULAR_EXPRESSION would ignore the exit status; this does not.
#
# Inputs: COMMAND ("|"-separated, since host arguments contain commas), REGEX, COUNT.
# The log's semicolons are read as commas and its square brackets as parentheses (CMake lists
# split on semicolons, except inside brackets).
cmake_minimum_required(VERSION 3.20)  # policies NEW (quoted strings are not variables)
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(REPLACE ";" "," out "${out}")
string(REPLACE "[" "(" out "${out}")
string(REPLACE "]" ")" out "${out}")
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the command failed with ${rc}")
endif()
string(REGEX MATCHALL "${REGEX}" hits "${out}")
list(LENGTH hits found)
if(NOT found EQUAL COUNT)
  message(FATAL_ERROR "expected ${COUNT} log lines matching '${REGEX}', found ${found}")
endif()
message(STATUS "exit 0 and ${found} log lines matching '${REGEX}', as expected")
