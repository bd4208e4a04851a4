# Offload equivalence driver (cmake -P). For each world size N in RANKS and each ZeRO stage in
# STAGES it trains the same model and data for STEPS steps with the optimizer state beside the
# parameters (offload_optimizer.device none), then with each of: device cpu (pinned), device nvme
# with sub_group_size SUB_GROUP and buffer_count 2, and device nvme with buffer_count 3; at stage 3
# also ZeRO-Infinity's offload_param: cpu (pinned), and nvme with the optimizer state on nvme too
# (parameters read ahead 100 elements at a time, so that gathers wait on reads). Every
# offloaded run's final parameters must equal the none run's within TOLERANCE (tensor-relative,
# see compare_params.cpp), and NVME_DIR must be empty after every nvme run (the state files are
# gone when the ranks exit).
#
# Inputs: MPIRUN (comma-separated command), HOST, COMPARE, MANIFEST, MODEL, WORK_DIR, NVME_DIR,
# RANKS, STAGES (comma-separated), MICRO, ACCUMULATION, STEPS, SUB_GROUP, TOLERANCE.
string(REPLACE "," ";" mpirun "${MPIRUN}")
string(REPLACE "," ";" ranks "${RANKS}")
string(REPLACE "," ";" stages "${STAGES}")
file(REMOVE_RECURSE "${WORK_DIR}" "${NVME_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}" "${NVME_DIR}")

set(device_none "{}")
set(device_cpu [=[{"zero_optimization": {"offload_optimizer": {"device": "cpu", "pin_memory": true}}}]=])
set(device_nvme2 "{\"zero_optimization\": {\"sub_group_size\": ${SUB_GROUP}, \"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"${NVME_DIR}\", \"buffer_count\": 2}}}")
set(device_nvme3 "{\"zero_optimization\": {\"sub_group_size\": ${SUB_GROUP}, \"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"${NVME_DIR}\", \"buffer_count\": 3, \"pin_memory\": true}}}")

set(device_param_cpu [=[{"zero_optimization": {"offload_param": {"device": "cpu", "pin_memory": true}}}]=])
set(device_param_nvme "{\"zero_optimization\": {\"sub_group_size\": ${SUB_GROUP}, \"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"${NVME_DIR}\", \"buffer_count\": 2}, \"offload_param\": {\"device\": \"nvme\", \"nvme_path\": \"${NVME_DIR}\", \"buffer_count\": 1, \"buffer_size\": 100}}}")

function(train np stage device dump)
  math(EXPR batch "${np} * ${MICRO} * ${ACCUMULATION}")
  execute_process(
    COMMAND ${mpirun} -np ${np} "${HOST}" --manifest "${MANIFEST}" --model ${MODEL}
            --binding groups --stage ${stage} --batch ${batch} --accumulation ${ACCUMULATION}
            --steps ${STEPS} --dump "${dump}" --set "${device_${device}}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0 OR NOT EXISTS "${dump}")
    message(FATAL_ERROR "dp_host (${MODEL}, stage ${stage}, ${np} ranks, offload ${device}) "
                        "failed with ${rc}:\n${out}")
  endif()
  # The run must say where its state lived (the plugin logs it at init_state).
  if(device MATCHES "nvme" AND NOT out MATCHES "optimizer state: [^\n]* in ${NVME_DIR}")
    message(FATAL_ERROR "offload ${device}: no 'optimizer state: ... in ${NVME_DIR}' line:\n${out}")
  endif()
  if(device STREQUAL "param_nvme" AND
     NOT out MATCHES "parameter partition \\(offload_param nvme\\): [^\n]* in ${NVME_DIR}")
    message(FATAL_ERROR "offload ${device}: no 'parameter partition ... in ${NVME_DIR}' line:\n${out}")
  endif()
  if(device STREQUAL "param_cpu" AND NOT out MATCHES "parameter partition \\(offload_param cpu\\)")
    message(FATAL_ERROR "offload ${device}: no 'parameter partition (offload_param cpu)' line:\n${out}")
  endif()
  file(GLOB left "${NVME_DIR}/*")
  if(left)
    message(FATAL_ERROR "offload ${device}: files left in ${NVME_DIR} after exit: ${left}")
  endif()
endfunction()

set(failed "")
foreach(n IN LISTS ranks)
  foreach(stage IN LISTS stages)
    set(reference "${WORK_DIR}/n${n}_stage${stage}_none.bin")
    train(${n} ${stage} none "${reference}")
    set(devices cpu nvme2 nvme3)
    if(stage EQUAL 3)
      list(APPEND devices param_cpu param_nvme)
    endif()
    foreach(device IN LISTS devices)
      set(result "${WORK_DIR}/n${n}_stage${stage}_${device}.bin")
      train(${n} ${stage} ${device} "${result}")
      execute_process(COMMAND "${COMPARE}" "${reference}" "${result}" --metric tensor
                              --tolerance ${TOLERANCE} --quiet
                      RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
      string(STRIP "${out}" out)
      message(STATUS "offload equivalence ${MODEL} N=${n} stage ${stage} ${device} vs none: ${out}")
      if(NOT rc EQUAL 0)
        list(APPEND failed "N=${n} stage ${stage} ${device}")
      endif()
    endforeach()
  endforeach()
endforeach()
if(failed)
  message(FATAL_ERROR "offloaded parameters differ from device none's beyond ${TOLERANCE}: ${failed}")
endif()
