# The example's test accuracy in fp16 and bf16 against fp32 (cmake -P): EPOCHS epochs on RANKS
# ranks, same seed, at stage 0 in fp32, fp16 and bf16, plus STAGE3_PRECISION at stage 3; every
# mixed-precision accuracy must be within TOLERANCE (absolute fraction) of fp32's.
#
# Inputs: MPIRUN (comma-separated), EXAMPLE, MANIFEST_DIR, DATA_DIR, WORK_DIR, RANKS, EPOCHS,
# TOLERANCE, STAGE3_PRECISION.
cmake_minimum_required(VERSION 3.20)  # policies NEW: quoted "fp16" is a string, not a variable
include(${CMAKE_CURRENT_LIST_DIR}/example_support.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

function(accuracy precision stage out_var)
  set(manifest "${WORK_DIR}/${precision}_stage${stage}.json")
  example_manifest(${precision} ${stage} "${manifest}")
  run_example(${RANKS} ${precision} ${stage} "${manifest}" "--epochs;${EPOCHS}" out)
  if(NOT out MATCHES "epoch ${EPOCHS}/${EPOCHS} [^\n]* test_acc ([0-9.]+)")
    message(FATAL_ERROR "no test accuracy for epoch ${EPOCHS} (${precision}, stage ${stage}):\n${out}")
  endif()
  set(${out_var} ${CMAKE_MATCH_1} PARENT_SCOPE)
  string(REGEX MATCHALL "epoch [0-9]+/[0-9]+[^\n]*" epochs "${out}")
  string(REPLACE ";" "\n  " epochs "${epochs}")
  message(STATUS "${precision} stage ${stage}:\n  ${epochs}")
endfunction()

accuracy(fp32 0 accuracy_fp32)
accuracy(fp16 0 accuracy_fp16)
accuracy(bf16 0 accuracy_bf16)
accuracy(${STAGE3_PRECISION} 3 accuracy_stage3)

to_millionths(${accuracy_fp32} reference)
to_millionths(${TOLERANCE} tolerance)
set(failures "")
foreach(run fp16 bf16 stage3)
  to_millionths(${accuracy_${run}} value)
  math(EXPR diff "${value} - ${reference}")
  if(diff LESS 0)
    math(EXPR diff "-(${diff})")
  endif()
  if(diff GREATER tolerance)
    list(APPEND failures "${run} ${accuracy_${run}}")
  endif()
endforeach()
message(STATUS "test accuracy after ${EPOCHS} epochs on ${RANKS} ranks: fp32 ${accuracy_fp32}, "
               "fp16 ${accuracy_fp16}, bf16 ${accuracy_bf16} (stage 0), ${STAGE3_PRECISION} at "
               "stage 3 ${accuracy_stage3}")
if(failures)
  message(FATAL_ERROR "more than ${TOLERANCE} from fp32's ${accuracy_fp32}: ${failures}")
endif()
