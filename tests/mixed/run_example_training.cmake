# The Fashion-MNIST example in fp16 or bf16 at one ZeRO stage on N = 1..4 ranks (cmake -P): each
# run trains MAX_STEPS optimizer steps of global batch BATCH and must exit 0, report the stage and
# precision, show a mean training loss of at most MAX_LOSS (chance is ln 10 = 2.30) and a test
# accuracy of at least MIN_ACCURACY (chance is 0.10), and dump parameters that are all finite.
#
# Inputs: MPIRUN (comma-separated), EXAMPLE, CHECK_FINITE, MANIFEST_DIR, DATA_DIR, WORK_DIR,
# PRECISION, STAGE, RANKS (comma-separated), BATCH, MAX_STEPS, MAX_LOSS, MIN_ACCURACY.
cmake_minimum_required(VERSION 3.20)  # policies NEW (quoted strings are not variables)
include(${CMAKE_CURRENT_LIST_DIR}/example_support.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(manifest "${WORK_DIR}/${PRECISION}_stage${STAGE}.json")
example_manifest(${PRECISION} ${STAGE} "${manifest}")
to_millionths(${MAX_LOSS} max_loss)
to_millionths(${MIN_ACCURACY} min_accuracy)

string(REPLACE "," ";" ranks "${RANKS}")
set(failures "")
foreach(np IN LISTS ranks)
  set(dump "${WORK_DIR}/params_np${np}.bin")
  run_example(${np} ${PRECISION} ${STAGE} "${manifest}"
              "--epochs;1;--batch;${BATCH};--max-steps;${MAX_STEPS};--dump-params;${dump}" out)
  if(NOT out MATCHES "epoch 1/1 +step ([0-9]+) +train_loss ([0-9.]+) +test_acc ([0-9.]+)")
    message(FATAL_ERROR "N=${np}: no epoch line with loss and accuracy:\n${out}")
  endif()
  set(steps ${CMAKE_MATCH_1})
  set(loss ${CMAKE_MATCH_2})
  set(accuracy ${CMAKE_MATCH_3})
  to_millionths(${loss} loss_m)
  to_millionths(${accuracy} accuracy_m)
  execute_process(COMMAND "${CHECK_FINITE}" "${dump}" RESULT_VARIABLE finite_rc
                  OUTPUT_VARIABLE finite_out ERROR_VARIABLE finite_out)
  string(STRIP "${finite_out}" finite_out)
  message(STATUS "${PRECISION} stage ${STAGE} N=${np}: ${steps} steps, train_loss ${loss}, "
                 "test_acc ${accuracy}; ${finite_out}")
  if(NOT steps EQUAL MAX_STEPS)
    list(APPEND failures "N=${np}: stopped after ${steps} steps, not ${MAX_STEPS}")
  endif()
  if(loss_m GREATER max_loss)
    list(APPEND failures "N=${np}: train_loss ${loss} above ${MAX_LOSS}")
  endif()
  if(accuracy_m LESS min_accuracy)
    list(APPEND failures "N=${np}: test_acc ${accuracy} below ${MIN_ACCURACY}")
  endif()
  if(NOT finite_rc EQUAL 0)
    list(APPEND failures "N=${np}: ${finite_out}")
  endif()
endforeach()
if(failures)
  string(REPLACE ";" "\n  " failures "${failures}")
  message(FATAL_ERROR "${PRECISION} at stage ${STAGE}:\n  ${failures}")
endif()
