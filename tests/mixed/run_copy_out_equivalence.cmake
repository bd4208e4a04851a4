# Model copies made in the optimizer's pass against the runtime's separate cast (cmake -P). For
# each precision and stage it trains the Fashion-MNIST example three times on RANKS ranks: with
# the offload plugin writing the f16/bf16 parameters in its step (the default), with
# offload.config fused_copy_out false (the runtime rounds them through the precision plugin), and
# with the fused copies and the Adam state on the drive (device nvme). The three final parameter
# dumps must be bitwise identical, and each run's log must say which path made the copies.
#
# Inputs: MPIRUN, EXAMPLE, MANIFEST_DIR, DATA_DIR, WORK_DIR, RANKS, PRECISIONS, STAGES
# (comma-separated), MAX_STEPS.
cmake_minimum_required(VERSION 3.20)
include(${CMAKE_CURRENT_LIST_DIR}/example_support.cmake)
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}" "${WORK_DIR}/nvme")
string(REPLACE "," ";" precisions "${PRECISIONS}")
string(REPLACE "," ";" stages "${STAGES}")

set(failures "")
foreach(precision IN LISTS precisions)
  foreach(stage IN LISTS stages)
    set(base "${WORK_DIR}/${precision}_stage${stage}")
    example_manifest(${precision} ${stage} "${base}_fused.json")
    file(READ "${base}_fused.json" manifest)
    string(JSON cast_manifest SET "${manifest}" offload config "{\"fused_copy_out\": false}")
    file(WRITE "${base}_cast.json" "${cast_manifest}")
    string(JSON nvme_manifest SET "${manifest}" zero_optimization offload_optimizer
           "{\"device\": \"nvme\", \"nvme_path\": \"${WORK_DIR}/nvme\", \"buffer_count\": 2}")
    string(JSON nvme_manifest SET "${nvme_manifest}" zero_optimization sub_group_size 20000)
    file(WRITE "${base}_nvme.json" "${nvme_manifest}")
    foreach(variant fused cast nvme)
      run_example(${RANKS} ${precision} ${stage} "${base}_${variant}.json"
                  "--epochs;1;--max-steps;${MAX_STEPS};--dump-params;${base}_${variant}.bin" out)
      set(runtime_casts "model copies: offload plugin '[^']+' does not write them")
      if(variant STREQUAL "cast" AND NOT out MATCHES "${runtime_casts}")
        list(APPEND failures "${precision} stage ${stage} ${variant}: the runtime did not say it cast")
      elseif(NOT variant STREQUAL "cast" AND out MATCHES "${runtime_casts}")
        list(APPEND failures "${precision} stage ${stage} ${variant}: the runtime cast, not the step")
      endif()
      if(NOT out MATCHES "zero stage ${stage}: the step writes the")
        list(APPEND failures "${precision} stage ${stage} ${variant}: zero lent no model copies")
      endif()
    endforeach()
    foreach(variant cast nvme)
      execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${base}_fused.bin"
                              "${base}_${variant}.bin" RESULT_VARIABLE rc)
      if(rc EQUAL 0)
        message(STATUS "${precision} stage ${stage} N=${RANKS}: fused vs ${variant}: identical bytes")
      else()
        list(APPEND failures "${precision} stage ${stage}: fused vs ${variant} differ")
      endif()
    endforeach()
  endforeach()
endforeach()
if(failures)
  string(REPLACE ";" "\n  " failures "${failures}")
  message(FATAL_ERROR "model copy-out:\n  ${failures}")
endif()
