# Trains device_job twice with one manifest, its parameters in CUDA device memory and then in
# SECOND memory (host, or cuda again; each run with its own overrides: the comm plugin differs),
# and compares the final parameters element by element within RTOL. cmake -P; the device run goes first so that a machine
# without a device skips at once: its "SKIP no CUDA device" line is the test's skip expression.
#
# Inputs: JOB, MPIRUN ("|"-separated launcher prefix), MANIFEST, DEVICE_OVERRIDES,
# SECOND (host or cuda), SECOND_OVERRIDES, RTOL, OUT (a directory for the two value files).
cmake_minimum_required(VERSION 3.20)
string(REPLACE "|" ";" launcher "${MPIRUN}")
file(MAKE_DIRECTORY "${OUT}")

function(run_job memory overrides file)
  execute_process(
    COMMAND ${launcher} -np 1 "${JOB}" --manifest "${MANIFEST}" --overrides "${overrides}"
      --memory ${memory} --out "${OUT}/${file}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(out MATCHES "SKIP no CUDA device")
    set(skipped TRUE PARENT_SCOPE)
    return()
  endif()
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "the ${memory}-memory job failed with ${rc}")
  endif()
endfunction()

set(skipped FALSE)
run_job(cuda "${DEVICE_OVERRIDES}" first.bin)
if(skipped)
  return()
endif()
run_job(${SECOND} "${SECOND_OVERRIDES}" second.bin)
execute_process(COMMAND "${JOB}" --compare "${OUT}/first.bin" "${OUT}/second.bin" --rtol ${RTOL}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the two jobs' parameters differ by more than ${RTOL}")
endif()
