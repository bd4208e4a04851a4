# cmake -DNM=<nm> -DLIBRARY=<plugin .so> -P check_exports.cmake
# Fails unless the library's only defined dynamic symbol is strata_plugin_entry_v1 (ABI rule 1).
execute_process(COMMAND ${NM} -D --defined-only ${LIBRARY}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} -D --defined-only ${LIBRARY} failed: ${err}")
endif()
string(REPLACE "\n" ";" lines "${out}")
set(symbols "")
foreach(line IN LISTS lines)
  # "<address> <type> <name>"
  if(line MATCHES "^[0-9a-fA-F]* *[A-Za-z] +([^ ]+)$")
    list(APPEND symbols "${CMAKE_MATCH_1}")
  endif()
endforeach()
if(NOT symbols STREQUAL "strata_plugin_entry_v1")
  string(REPLACE ";" ", " shown "${symbols}")
  message(FATAL_ERROR "${LIBRARY}: exports [${shown}]; expected exactly strata_plugin_entry_v1")
endif()
message(STATUS "${LIBRARY}: exports only strata_plugin_entry_v1")
