# ZeRO stages 1, 2 and 3 give stage 0's parameters bit for bit with an fp16 or bf16 model (cmake
# -P): the Fashion-MNIST example trains MAX_STEPS steps of global batch BATCH (one micro-batch per
# step) on RANKS ranks at each stage and precision, and rank 0's final parameters must have the
# same bytes as stage 0's.
#
# Why bitwise holds: every stage casts each half gradient to fp32, averages in fp32 with the same
# comm plugin arithmetic (stage 0 allreduces, stages 1-3 reduce-scatter; at 2 ranks an fp32 sum of
# two values does not depend on the order) and hands the optimizer the fp32 average as it came
# (plugins/zero/src/grad_partition.hpp). Before stages 2-3 rounded each average into a
# model-dtype gradient partition, and 12 steps at 2 ranks then differed by up to 1.6e-2 (fp16) and
# 2.6e-2 (bf16) of a tensor's largest value.
#
# COMMS: "fp32" runs with DeepSpeed's communication_data_type unset (fp32, the default); "half"
# sets it to the model's dtype (gradients reduced in f16/bf16, half the bytes): the stages must
# agree bit for bit there too (stage 0's allreduce and stages 1-3's reduce-scatter round alike),
# and stage 0 must differ from its fp32 run (the key acted).
#
# Inputs: MPIRUN (comma-separated), EXAMPLE, MANIFEST_DIR, DATA_DIR, WORK_DIR, RANKS, PRECISIONS
# (comma-separated), STAGES (comma-separated, first is the reference), COMMS (comma-separated),
# BATCH, MAX_STEPS.
cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
string(REPLACE "," ";" mpirun "${MPIRUN}")
string(REPLACE "," ";" precisions "${PRECISIONS}")
string(REPLACE "," ";" stages "${STAGES}")
if(NOT COMMS)
  set(COMMS fp32)
endif()
string(REPLACE "," ";" comms "${COMMS}")
list(GET stages 0 reference)
set(failures "")
foreach(comm IN LISTS comms)
foreach(precision IN LISTS precisions)
  if(precision STREQUAL "fp16")
    set(block "\"fp16\": {\"enabled\": true, \"initial_scale_power\": 16}")
  elseif(precision STREQUAL "bf16")
    set(block "\"bf16\": {\"enabled\": true}")
  else()
    message(FATAL_ERROR "precision '${precision}' is not fp16 or bf16")
  endif()
  if(comm STREQUAL "half")
    string(APPEND block ", \"communication_data_type\": \"${precision}\"")
  elseif(NOT comm STREQUAL "fp32")
    message(FATAL_ERROR "comm '${comm}' is not fp32 or half")
  endif()
  foreach(stage IN LISTS stages)
    if(stage EQUAL 0)
      set(manifest "${MANIFEST_DIR}/default.json")
    else()
      set(manifest "${MANIFEST_DIR}/zero${stage}.json")
    endif()
    set(dump "${WORK_DIR}/${precision}_${comm}_stage${stage}.bin")
    execute_process(
      COMMAND ${mpirun} -np ${RANKS} "${EXAMPLE}" --manifest "${manifest}" --seed 1
              --data-dir "${DATA_DIR}" --epochs 1 --batch ${BATCH} --max-steps ${MAX_STEPS}
              --overrides "{${block}, \"zero_optimization\": {\"stage\": ${stage}}}"
              --dump-params "${dump}"
      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${precision} stage ${stage} on ${RANKS} ranks failed with ${rc}:\n${out}")
    endif()
    if(NOT out MATCHES "stage=${stage} " OR NOT out MATCHES "precision ${precision} ")
      message(FATAL_ERROR "${precision} stage ${stage}: the run did not report both:\n${out}")
    endif()
    if(NOT out MATCHES "step ${MAX_STEPS} ")
      message(FATAL_ERROR "${precision} stage ${stage}: did not reach step ${MAX_STEPS}:\n${out}")
    endif()
    file(SHA256 "${dump}" hash)
    set(hash_${comm}_${precision}_${stage} ${hash})
    set(what "${precision} (${comm} reduction) stage ${stage}")
    if(stage EQUAL reference)
      message(STATUS "${what}: ${hash}")
    elseif(hash STREQUAL hash_${comm}_${precision}_${reference})
      message(STATUS "${what}: ${hash}, bitwise stage ${reference}'s")
    else()
      message(STATUS "${what}: ${hash}, NOT stage ${reference}'s")
      list(APPEND failures "${what} differs from stage ${reference} (${dump})")
    endif()
  endforeach()
  if(comm STREQUAL "half" AND DEFINED hash_fp32_${precision}_${reference} AND
     hash_fp32_${precision}_${reference} STREQUAL hash_half_${precision}_${reference})
    list(APPEND failures "${precision}: communication_data_type ${precision} changed nothing")
  endif()
endforeach()
endforeach()
if(failures)
  string(REPLACE ";" "\n  " failures "${failures}")
  message(FATAL_ERROR "on ${RANKS} ranks:\n  ${failures}")
endif()
