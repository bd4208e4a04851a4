# The same data-parallel training (dp_host, the example's MLP, STEPS steps) over each comm path on
# one host: allreduce-mpi over MPI and over shared memory, allreduce-gloo over TCP and over shared
# memory. The final parameters must be bitwise equal
#  - at 2 ranks, over all four paths: every allreduce then sums two values per element, and a + b
#    is b + a exactly, whichever rank's value comes first;
#  - at 3 and more ranks, between the two shared-memory paths (one code: plugins/common/shm, which
#    folds the ranks in rank order); MPI's and Gloo's own allreduces fold in orders of their own
#    (Open MPI's tuned algorithm, Gloo's ring), so those runs must agree with the shared-memory
#    run within TOLERANCE (max |difference|), the bound the equivalence tests already justify for
#    a changed summation order (dp_equivalence_accum*: ~1e-6 measured over 50 steps).
#
# Inputs: MPIRUN (comma-separated command), STRATA_RUN (the launcher), HOST (dp_host), COMPARE
# (compare_params), MANIFEST, WORK_DIR, RANKS (comma-separated), STEPS, TOLERANCE.
string(REPLACE "," ";" mpirun "${MPIRUN}")
string(REPLACE "," ";" ranks "${RANKS}")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# path: mpi_tcp | mpi_shm | gloo_tcp | gloo_shm
function(train np path dump)
  if(path MATCHES "^mpi")
    set(launch ${mpirun} -np ${np})
    set(library strata_allreduce_mpi)
  else()
    set(launch "${STRATA_RUN}" --backend gloo -np ${np} --)
    set(library strata_allreduce_gloo)
  endif()
  if(path MATCHES "_shm$")
    set(shm true)
  else()
    set(shm false)
  endif()
  set(comm "{\"comm\": {\"library\": \"${library}\", \"config\": {\"shm\": ${shm}}}}")
  execute_process(
    COMMAND ${launch} "${HOST}" --manifest "${MANIFEST}" --batch ${batch} --steps ${STEPS}
            --set "${comm}" --dump "${dump}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "dp_host on ${np} ranks over ${path} failed with ${rc}:\n${out}")
  endif()
  if(NOT EXISTS "${dump}")
    message(FATAL_ERROR "dp_host on ${np} ranks over ${path} wrote no ${dump}:\n${out}")
  endif()
  # The create line says which path the plugin took.
  if(shm AND NOT out MATCHES "shm on \\(")
    message(FATAL_ERROR "${path} at ${np} ranks: the plugin did not log \"shm on (\":\n${out}")
  endif()
  if(NOT shm AND NOT out MATCHES "shm off \\(comm.config\\)")
    message(FATAL_ERROR "${path} at ${np} ranks: the plugin did not log \"shm off (comm.config)\":\n${out}")
  endif()
endfunction()

foreach(n IN LISTS ranks)
  math(EXPR batch "${n} * 8")
  foreach(path mpi_shm gloo_shm mpi_tcp gloo_tcp)
    train(${n} ${path} "${WORK_DIR}/np${n}_${path}.bin")
  endforeach()
  set(reference "${WORK_DIR}/np${n}_mpi_shm.bin")
  foreach(path gloo_shm mpi_tcp gloo_tcp)
    set(result "${WORK_DIR}/np${n}_${path}.bin")
    execute_process(COMMAND "${COMPARE}" "${reference}" "${result}" --metric abs
                            --tolerance ${TOLERANCE} --quiet
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    string(STRIP "${out}" out)
    execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${reference}" "${result}"
                    RESULT_VARIABLE differ)
    if(differ EQUAL 0)
      set(verdict "bitwise equal")
    else()
      set(verdict "not bitwise equal")
    endif()
    message(STATUS "N=${n} ${path} vs mpi_shm: ${verdict}; ${out}")
    if(n EQUAL 2 OR path STREQUAL "gloo_shm")
      if(NOT differ EQUAL 0)
        message(FATAL_ERROR "N=${n}: ${path}'s parameters are not bitwise mpi_shm's")
      endif()
    elseif(NOT rc EQUAL 0)
      message(FATAL_ERROR "N=${n}: ${path}'s parameters differ from mpi_shm's beyond ${TOLERANCE}")
    endif()
  endforeach()
endforeach()
