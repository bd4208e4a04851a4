# Helpers shared by the Fashion-MNIST example drivers (run_example_training.cmake,
# run_example_accuracy.cmake).

# example_manifest(<precision> <stage> <out_file>): writes a manifest for the Fashion-MNIST example:
# examples/manifests/default.json (stage 0) or zero<stage>.json, with DeepSpeed's fp16 block
# (dynamic loss scaling from 2^16, DeepSpeed's defaults) or bf16 block enabled; fp32 as is.
# Needs MANIFEST_DIR (the examples/manifests folder).
function(example_manifest precision stage out_file)
  if(stage EQUAL 0)
    file(READ "${MANIFEST_DIR}/default.json" manifest)
  else()
    file(READ "${MANIFEST_DIR}/zero${stage}.json" manifest)
  endif()
  string(JSON manifest SET "${manifest}" zero_optimization stage ${stage})
  if(precision STREQUAL "fp16")
    string(JSON manifest SET "${manifest}" fp16 "{\"enabled\": true, \"initial_scale_power\": 16}")
  elseif(precision STREQUAL "bf16")
    string(JSON manifest SET "${manifest}" bf16 "{\"enabled\": true}")
  elseif(NOT precision STREQUAL "fp32")
    message(FATAL_ERROR "example_manifest: precision '${precision}' is not fp32, fp16 or bf16")
  endif()
  file(WRITE "${out_file}" "${manifest}")
endfunction()

# CMake's math is integer-only: "0.8684" -> 868400 millionths.
function(to_millionths text out_var)
  if(NOT text MATCHES "^([0-9]*)\\.?([0-9]*)$")
    message(FATAL_ERROR "not a decimal fraction: '${text}'")
  endif()
  set(int "${CMAKE_MATCH_1}")
  string(SUBSTRING "${CMAKE_MATCH_2}000000" 0 6 frac)
  if(int STREQUAL "")
    set(int 0)
  endif()
  math(EXPR value "${int} * 1000000 + ${frac}")
  set(${out_var} ${value} PARENT_SCOPE)
endfunction()

# run_example(<np> <precision> <stage> <manifest> <extra args list> <out_var>): runs the example
# on <np> ranks and returns its whole output; fails unless it exits 0 and the runtime and the
# precision stratum report the manifest's stage and precision. Needs MPIRUN (comma-separated),
# EXAMPLE, DATA_DIR.
function(run_example np precision stage manifest extra out_var)
  string(REPLACE "," ";" mpirun "${MPIRUN}")
  execute_process(
    COMMAND ${mpirun} -np ${np} "${EXAMPLE}" --manifest "${manifest}" --seed 1
            --data-dir "${DATA_DIR}" ${extra}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "fashion_mnist on ${np} ranks with ${manifest} failed with ${rc}:\n${out}")
  endif()
  if(NOT out MATCHES "stage=${stage} ")
    message(FATAL_ERROR "the runtime did not report stage=${stage}:\n${out}")
  endif()
  if(NOT out MATCHES "precision ${precision} ")
    message(FATAL_ERROR "the precision stratum did not report ${precision}:\n${out}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()
