# Compatibility driver (cmake -P): trains compat_host with STRATUM's library set to each of
# LIBRARIES in turn (the first is the reference, built against today's header) and requires every
# run's final parameters to be identical to the reference's, and each run's log to say which build
# of the plugin ran ("<LOG_NAME>: built with ABI <version>", versions in VERSIONS, same order).
#
# Inputs: HOST, MANIFEST, WORK_DIR, STRATUM, LIBRARIES and VERSIONS (comma-separated), LOG_NAME,
# STEPS, STAGES (comma-separated ZeRO stages; each is its own comparison), MPIRUN (comma-separated,
# empty to run the host directly).
string(REPLACE "," ";" libraries "${LIBRARIES}")
string(REPLACE "," ";" versions "${VERSIONS}")
string(REPLACE "," ";" stages "${STAGES}")
string(REPLACE "," ";" mpirun "${MPIRUN}")
if(mpirun)
  list(APPEND mpirun -np 1)
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

set(failed "")
foreach(stage IN LISTS stages)
  set(reference "")
  set(i 0)
  foreach(library IN LISTS libraries)
    list(GET versions ${i} version)
    math(EXPR i "${i} + 1")
    set(overrides "{\"${STRATUM}\": {\"library\": \"${library}\"}, \"zero_optimization\": {\"stage\": ${stage}}}")
    set(dump "${WORK_DIR}/stage${stage}_${library}.txt")
    execute_process(COMMAND ${mpirun} "${HOST}" "${MANIFEST}" ${STEPS} "${dump}" "${overrides}"
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(NOT rc EQUAL 0 OR NOT EXISTS "${dump}")
      message(FATAL_ERROR "compat_host with ${STRATUM} ${library} (stage ${stage}) failed with ${rc}:\n${out}")
    endif()
    string(FIND "${out}" "${LOG_NAME}: built with ABI ${version}" at)
    if(at EQUAL -1)
      message(FATAL_ERROR "${STRATUM} ${library} (stage ${stage}): the log lacks "
                          "'${LOG_NAME}: built with ABI ${version}':\n${out}")
    endif()
    if(NOT reference)
      set(reference "${dump}")
      continue()
    endif()
    file(READ "${reference}" want)
    file(READ "${dump}" got)
    if(want STREQUAL got)
      message(STATUS "stage ${stage}: ${library} (ABI ${version}) gives the parameters of ${reference}")
    else()
      list(APPEND failed "stage ${stage}: ${library}")
      message(STATUS "stage ${stage}: ${library} (ABI ${version}) differs from ${reference}")
    endif()
  endforeach()
endforeach()
if(failed)
  message(FATAL_ERROR "parameters differ from today's build of the plugin: ${failed}")
endif()
