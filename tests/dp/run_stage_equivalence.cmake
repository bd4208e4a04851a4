# ZeRO stage equivalence driver (cmake -P). For each world size N in RANKS it trains the same
# model, data and global batch N × MICRO × ACCUMULATION for STEPS optimizer steps at stage 0 and
# at each stage in STAGES, on N ranks each time, and requires every stage's final parameters to
# equal stage 0's within TOLERANCE under METRIC (see compare_params.cpp). dp_host itself fails if
# the ranks of one run ever hold different parameters.
#
# Inputs: MPIRUN (comma-separated command), HOST, COMPARE, MANIFEST, MODEL, BINDING, WORK_DIR,
# RANKS, STAGES (comma-separated), MICRO, ACCUMULATION, STEPS, CLIP, METRIC, TOLERANCE.
# Optional: REFERENCE_BINDING (default BINDING) — the binding of the stage-0 reference run;
# EXTRA (comma-separated) — more dp_host flags for every run.
string(REPLACE "," ";" mpirun "${MPIRUN}")
string(REPLACE "," ";" ranks "${RANKS}")
string(REPLACE "," ";" stages "${STAGES}")
string(REPLACE "," ";" extra "${EXTRA}")
if(NOT DEFINED REFERENCE_BINDING)
  set(REFERENCE_BINDING ${BINDING})
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(train np stage binding dump)
  math(EXPR batch "${np} * ${MICRO} * ${ACCUMULATION}")
  execute_process(
    COMMAND ${mpirun} -np ${np} "${HOST}" --manifest "${MANIFEST}" --model ${MODEL}
            --binding ${binding} --stage ${stage} --clip ${CLIP} --batch ${batch}
            --accumulation ${ACCUMULATION} --steps ${STEPS} --dump "${dump}" ${extra}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0 OR NOT EXISTS "${dump}")
    message(FATAL_ERROR "dp_host (${MODEL}, ${binding}, stage ${stage}, ${np} ranks, accumulation "
                        "${ACCUMULATION}, clip ${CLIP}) failed with ${rc}:\n${out}")
  endif()
  # With clipping on, the run must actually have clipped (else the test does not cover it).
  if(CLIP GREATER 0 AND NOT out MATCHES "\\([1-9][0-9]* clipped")
    message(FATAL_ERROR "clip ${CLIP} never clipped a step; lower it:\n${out}")
  endif()
endfunction()

set(failed "")
foreach(n IN LISTS ranks)
  set(reference "${WORK_DIR}/n${n}_stage0_${REFERENCE_BINDING}.bin")
  train(${n} 0 ${REFERENCE_BINDING} "${reference}")
  foreach(stage IN LISTS stages)
    set(result "${WORK_DIR}/n${n}_stage${stage}_${BINDING}.bin")
    train(${n} ${stage} ${BINDING} "${result}")
    execute_process(COMMAND "${COMPARE}" "${reference}" "${result}" --metric ${METRIC}
                            --tolerance ${TOLERANCE} --quiet
                    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    string(STRIP "${out}" out)
    # One line per comparison, greppable: the figures the issue asks to report.
    message(STATUS "equivalence ${MODEL} ${BINDING} N=${n} accumulation=${ACCUMULATION} "
                   "clip=${CLIP} stage ${stage} vs stage 0: ${out}")
    if(NOT rc EQUAL 0)
      list(APPEND failed "N=${n} stage ${stage}")
    endif()
  endforeach()
endforeach()
if(failed)
  message(FATAL_ERROR "parameters differ from stage 0's beyond ${TOLERANCE} (${METRIC}): ${failed}")
endif()
