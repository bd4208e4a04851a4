# Data-parallel equivalence driver (cmake -P). For each world size N in RANKS it trains the same
# global batch G = N × MICRO × ACCUMULATION twice — once on 1 rank (micro-batch G, no
# accumulation) and once on N ranks (micro-batch MICRO, ACCUMULATION micro-steps) — and requires
# the final parameters to agree within TOLERANCE. dp_host itself fails if ranks ever diverge.
#
# Inputs: MPIRUN (comma-separated command), HOST, COMPARE, MANIFEST, WORK_DIR, RANKS (comma-
# separated), MICRO, ACCUMULATION, STEPS, TOLERANCE.
string(REPLACE "," ";" mpirun "${MPIRUN}")
string(REPLACE "," ";" ranks "${RANKS}")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(train np batch accumulation dump)
  execute_process(
    COMMAND ${mpirun} -np ${np} "${HOST}" --manifest "${MANIFEST}" --batch ${batch}
            --accumulation ${accumulation} --steps ${STEPS} --dump "${dump}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "dp_host on ${np} ranks (batch ${batch}, accumulation ${accumulation}) "
                        "failed with ${rc}:\n${out}")
  endif()
  if(NOT EXISTS "${dump}")
    message(FATAL_ERROR "dp_host on ${np} ranks wrote no ${dump}:\n${out}")
  endif()
endfunction()

foreach(n IN LISTS ranks)
  math(EXPR global "${n} * ${MICRO} * ${ACCUMULATION}")
  set(reference "${WORK_DIR}/reference_batch${global}.bin")
  if(NOT EXISTS "${reference}")
    train(1 ${global} 1 "${reference}")
  endif()
  set(result "${WORK_DIR}/ranks${n}_batch${global}_accum${ACCUMULATION}.bin")
  train(${n} ${global} ${ACCUMULATION} "${result}")
  execute_process(COMMAND "${COMPARE}" "${reference}" "${result}" --metric abs
                          --tolerance ${TOLERANCE} --quiet
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(STRIP "${out}" out)
  message(STATUS "N=${n} micro ${MICRO} x accumulation ${ACCUMULATION} vs 1 rank, batch ${global}: ${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "N=${n}: parameters differ from the single-rank run beyond ${TOLERANCE}")
  endif()
endforeach()
