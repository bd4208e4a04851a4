# The Fashion-MNIST example at ZeRO stage 3 against stage 0 (cmake -P): trains EPOCHS epochs on
# RANKS ranks with the example's default manifest as is (stage 0) and with zero_optimization
# switched to stage 3 (parameters partitioned: persistence threshold 1000, so only the biases stay
# whole), same seed; the final test accuracies must agree within TOLERANCE (absolute fraction).
#
# Inputs: MPIRUN (comma-separated), EXAMPLE, MANIFEST, DATA_DIR, WORK_DIR, RANKS, EPOCHS, TOLERANCE.
string(REPLACE "," ";" mpirun "${MPIRUN}")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

file(READ "${MANIFEST}" stage0)
string(JSON stage3 SET "${stage0}" zero_optimization stage 3)
string(JSON stage3 SET "${stage3}" zero_optimization stage3_param_persistence_threshold 1000)
file(WRITE "${WORK_DIR}/stage3.json" "${stage3}")

function(train stage manifest result_var)
  execute_process(
    COMMAND ${mpirun} -np ${RANKS} "${EXAMPLE}" --epochs ${EPOCHS} --manifest "${manifest}"
            --seed 1 --data-dir "${DATA_DIR}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "fashion_mnist at stage ${stage} failed with ${rc}:\n${out}")
  endif()
  if(NOT out MATCHES "stage=${stage} ")
    message(FATAL_ERROR "the runtime did not report stage=${stage}:\n${out}")
  endif()
  if(NOT out MATCHES "epoch ${EPOCHS}/${EPOCHS} [^\n]* test_acc ([0-9.]+)")
    message(FATAL_ERROR "no test accuracy for epoch ${EPOCHS} at stage ${stage}:\n${out}")
  endif()
  set(${result_var} ${CMAKE_MATCH_1} PARENT_SCOPE)
  string(REGEX MATCHALL "epoch [0-9]+/[0-9]+[^\n]*" epochs "${out}")
  string(REPLACE ";" "\n  " epochs "${epochs}")
  message(STATUS "stage ${stage}:\n  ${epochs}")
endfunction()

train(0 "${MANIFEST}" accuracy0)
train(3 "${WORK_DIR}/stage3.json" accuracy3)
# CMake's math is integer-only: compare in millionths. "0.8684" -> 868400.
function(to_millionths text out_var)
  if(NOT text MATCHES "^([0-9]*)\\.?([0-9]*)$")
    message(FATAL_ERROR "not a decimal fraction: '${text}'")
  endif()
  set(int "${CMAKE_MATCH_1}")
  string(SUBSTRING "${CMAKE_MATCH_2}000000" 0 6 frac)
  if(int STREQUAL "")
    set(int 0)
  endif()
  math(EXPR value "${int} * 1000000 + ${frac}")  # CMake's math reads 003000 as decimal
  set(${out_var} ${value} PARENT_SCOPE)
endfunction()

to_millionths(${accuracy0} a0)
to_millionths(${accuracy3} a3)
to_millionths(${TOLERANCE} tolerance)
math(EXPR diff "${a3} - ${a0}")
if(diff LESS 0)
  math(EXPR diff "-(${diff})")
endif()
message(STATUS "test accuracy after ${EPOCHS} epochs on ${RANKS} ranks: stage 0 ${accuracy0}, "
               "stage 3 ${accuracy3}, |difference| ${diff} millionths (tolerance ${TOLERANCE})")
if(diff GREATER tolerance)
  message(FATAL_ERROR "stage 3's test accuracy differs from stage 0's by more than ${TOLERANCE}")
endif()
