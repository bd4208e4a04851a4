# "Swap without rebuilding" (cmake -P): one fashion_mnist binary, several manifests. Checks that
#  - the binary's sha256 is the same before and after all runs (nothing was rebuilt or patched),
#  - each run loaded what its manifest names (the runtime's "plugins:" line on rank 0) and split
#    the batch as it says (the host's own start-up line),
#  - different optimizers end with different parameters (and AdamW/SGD with different losses),
#    and so does switching gradient clipping off,
#  - the same manifest twice gives identical bytes, and so does a manifest that only changes how
#    gradients are bucketed (on 2 ranks a sum is a+b whatever the grouping),
#  - a manifest naming an unknown optimizer makes the host print "error: ..." and exit 1,
#  - ZeRO stages 1, 2 and 3 (zero<N>.json) run at the stage they name (the plugins line and the
#    sharding plugin's own line) and end with stage 0's parameters (fp32: within 1e-6 relative to
#    each tensor's scale; on 2 ranks they are in fact bit-identical today),
#  - fp16 and bf16 (manifests/fp16.json, bf16.json: default.json plus the DeepSpeed block) run in
#    that precision (the precision plugin's line), end with a finite loss and finite parameters,
#    and with parameters that differ from fp32's,
#  - optimizer offload to cpu (zero2_offload_cpu.json) and to nvme (zero3_offload_nvme.json with
#    nvme_path moved into WORK_DIR/nvme) run with the device they name, keep the state where they
#    say (host memory, pinned or warned about; files in WORK_DIR/nvme, gone after the run) and
#    end with the parameters of the same stage without offload (within 1e-6 relative to each
#    tensor's scale).
#
# Inputs: MPIRUN (comma-separated), BINARY, MANIFEST_DIR (examples/manifests), SWAP_MANIFEST_DIR
# (tests/swap/manifests), PARAMS (swap_params), WORK_DIR, DATA_DIR, STEPS.
string(REPLACE "," ";" mpirun "${MPIRUN}")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
file(SHA256 "${BINARY}" sha_before)
# The prefix of a line logged by rank 0 at info level (what the runtime and plugins say there).
set(rank0 "\\[strata rank 0\\] \\[info\\] ")
message(STATUS "fashion_mnist sha256 ${sha_before}")
# The names the in-tree plugins report in the runtime's "plugins:" line, by library.
set(plugin_name_strata_allreduce_mpi allreduce-mpi)
set(plugin_name_strata_zero zero)
set(plugin_name_strata_amp amp)
set(plugin_name_strata_offload offload)

# Runs the binary on 2 ranks with `manifest`; sets <tag>_out, <tag>_rc in the caller's scope.
function(run tag manifest)
  execute_process(
    COMMAND ${mpirun} -np 2 "${BINARY}" --manifest "${manifest}" --epochs 1 --max-steps ${STEPS}
            --data-dir "${DATA_DIR}" --dump-params "${WORK_DIR}/${tag}.bin"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  file(WRITE "${WORK_DIR}/${tag}.log" "${out}")
  set(${tag}_out "${out}" PARENT_SCOPE)
  set(${tag}_rc "${rc}" PARENT_SCOPE)
endfunction()

function(expect_match tag regex what)
  if(NOT "${${tag}_out}" MATCHES "${regex}")
    message(FATAL_ERROR "${tag}: expected ${what} (/${regex}/) in the output:\n${${tag}_out}")
  endif()
endfunction()

function(expect_no_match tag regex what)
  if("${${tag}_out}" MATCHES "${regex}")
    message(FATAL_ERROR "${tag}: expected no ${what} (/${regex}/) in the output:\n${${tag}_out}")
  endif()
endfunction()

# A successful run of `manifest` whose runtime reports `optimizer` and ZeRO `stage` (optional,
# default 0) on rank 0 and whose host splits the global batch of 256 over 2 ranks as micro ×
# `accumulation`; the final loss is a finite number. Sets <tag>_loss and <tag>_out.
function(run_ok tag manifest optimizer accumulation)
  set(stage 0)
  if(ARGC GREATER 4)
    set(stage ${ARGV4})
  endif()
  if(NOT IS_ABSOLUTE "${manifest}")
    set(manifest "${MANIFEST_DIR}/${manifest}")
  endif()
  run(${tag} "${manifest}")
  if(NOT ${tag}_rc EQUAL 0)
    message(FATAL_ERROR "${tag} (${manifest}) failed with ${${tag}_rc}:\n${${tag}_out}")
  endif()
  # The plugins the manifest names, by the names they report (the in-tree ones; others: any).
  file(READ "${manifest}" json)
  set(plugins "")
  foreach(stratum comm sharding precision offload)
    string(JSON library ERROR_VARIABLE missing GET "${json}" ${stratum} library)
    if(DEFINED plugin_name_${library})
      string(APPEND plugins "${stratum}=${plugin_name_${library}} ")
    else()
      string(APPEND plugins "${stratum}=[^ ]+ ")
    endif()
  endforeach()
  expect_match(${tag} "${rank0}plugins: ${plugins}optimizer=${optimizer} stage=${stage} world_size=2 "
               "rank 0's plugins line with ${plugins}optimizer=${optimizer} stage=${stage}")
  math(EXPR micro "256 / (2 * ${accumulation})")
  expect_match(${tag} "global batch 256 = micro ${micro} x accumulation ${accumulation} x 2 ranks"
               "the batch split of the manifest")
  expect_match(${tag} "step ${STEPS}  train_loss [0-9.]+" "a final line after ${STEPS} steps")
  string(REGEX MATCH "step ${STEPS}  train_loss ([0-9.]+)" unused "${${tag}_out}")
  set(${tag}_loss "${CMAKE_MATCH_1}" PARENT_SCOPE)
  set(${tag}_out "${${tag}_out}" PARENT_SCOPE)
  message(STATUS "${tag}: ${manifest} -> optimizer=${optimizer} stage=${stage}, "
                 "train_loss ${CMAKE_MATCH_1}")
endfunction()

# swap_params (swap_params.cpp) on the dumps of runs a and b: `same` within `tolerance`, `differ`
# by at least `tolerance`, both relative to each tensor's largest value; either way both dumps
# must be the example MLP's size and finite.
function(params check a b tolerance why)
  if(check STREQUAL "same")
    set(option --tolerance)
  else()
    set(option --min)
  endif()
  execute_process(COMMAND "${PARAMS}" ${check} "${WORK_DIR}/${a}.bin" "${WORK_DIR}/${b}.bin"
                          ${option} ${tolerance}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(STRIP "${out}" out)
  message(STATUS "${a} vs ${b} (${check}): ${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${a} and ${b}: parameters should be ${check} (${why}): ${out}")
  endif()
endfunction()

# Escapes `text` for use inside a regular expression.
function(regex_quote text out_var)
  string(REGEX REPLACE "([][.*+?^$()|\\\\])" "\\\\\\1" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

function(same_bytes a b why)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${WORK_DIR}/${a}.bin" "${WORK_DIR}/${b}.bin"
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${a} and ${b} should have identical parameters (${why})")
  endif()
  if(NOT "${${a}_loss}" STREQUAL "${${b}_loss}")
    message(FATAL_ERROR "${a} and ${b} should report the same loss (${why}): ${${a}_loss} vs ${${b}_loss}")
  endif()
endfunction()

function(different a b why)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${WORK_DIR}/${a}.bin" "${WORK_DIR}/${b}.bin"
                  RESULT_VARIABLE rc)
  if(rc EQUAL 0)
    message(FATAL_ERROR "${a} and ${b} ended with identical parameters although ${why}")
  endif()
endfunction()

run_ok(adamw default.json adamw 1)
run_ok(adamw_again default.json adamw 1)
run_ok(sgd sgd_momentum.json sgd 1)
run_ok(adam adam_accumulation.json adam 2)
run_ok(buckets small_buckets.json adamw 1)
run_ok(clipped clipping.json sgd 1)

same_bytes(adamw adamw_again "same manifest, same seed")
same_bytes(adamw buckets "bucketing does not change a 2-rank sum")
different(adamw sgd "AdamW and SGD differ")
if("${adamw_loss}" STREQUAL "${sgd_loss}")
  message(FATAL_ERROR "AdamW and SGD report the same loss ${adamw_loss} after ${STEPS} steps")
endif()
different(adamw adam "Adam without weight decay, accumulating 2 micro-steps, differs from AdamW")

# The same manifest with clipping switched off must end elsewhere (the gradient norm here is
# above 1 while clipping.json clips at 0.25).
file(READ "${MANIFEST_DIR}/clipping.json" text)
string(REGEX REPLACE "\"gradient_clipping\": [0-9.]+" "\"gradient_clipping\": 0" text "${text}")
file(WRITE "${WORK_DIR}/noclip.json" "${text}")
run_ok(unclipped "${WORK_DIR}/noclip.json" sgd 1)
different(clipped unclipped "only one of them clips")

# An impossible manifest fails cleanly, with the runtime's message.
file(READ "${MANIFEST_DIR}/default.json" text)
string(REPLACE "\"AdamW\"" "\"Adagrad\"" text "${text}")
file(WRITE "${WORK_DIR}/adagrad.json" "${text}")
run(adagrad "${WORK_DIR}/adagrad.json")
if(adagrad_rc EQUAL 0)
  message(FATAL_ERROR "a manifest with optimizer Adagrad should fail:\n${adagrad_out}")
endif()
expect_match(adagrad "error: [^\n]*optimizer.type[^\n]*Adagrad" "an error line naming optimizer.type")

# ---- ZeRO stage, precision and offload, switched by the manifest alone ----------------------
expect_match(adamw "${rank0}precision: precision fp32 " "rank 0's precision line")
expect_match(adamw "${rank0}offload: [^\n]*offload_optimizer.device none"
             "rank 0's offload line with device none")

# ZeRO stages 1-3 partition optimizer state, gradients, parameters: same fp32 training as stage 0.
foreach(stage 1 2 3)
  run_ok(zero${stage} zero${stage}.json adamw 1 ${stage})
  expect_match(zero${stage} "${rank0}sharding: zero stage ${stage}:"
               "the sharding plugin's stage ${stage} line on rank 0")
  expect_match(zero${stage} "${rank0}precision: precision fp32 " "precision fp32")
  expect_match(zero${stage} "${rank0}offload: [^\n]*offload_optimizer.device none"
               "rank 0's offload line with device none")
  params(same adamw zero${stage} 1e-6 "ZeRO stage ${stage} trains as stage 0 does")
endforeach()

# fp16 (dynamic loss scaling) and bf16: the same model trained in another number format.
foreach(precision fp16 bf16)
  run_ok(${precision} "${SWAP_MANIFEST_DIR}/${precision}.json" adamw 1 0)
  expect_match(${precision} "${rank0}precision: precision ${precision} "
               "rank 0's precision ${precision} line")
  execute_process(COMMAND "${PARAMS}" finite "${WORK_DIR}/${precision}.bin"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${precision}: parameters not finite: ${out}")
  endif()
  params(differ adamw ${precision} 1e-5 "${precision} rounds what fp32 does not")
endforeach()
expect_match(fp16 "precision fp16 with dynamic loss scaling" "dynamic loss scaling")
different(fp16 bf16 "fp16 and bf16 round differently")

# Optimizer state offloaded to (pinned) host memory: same parameters as stage 2 without offload.
run_ok(offload_cpu zero2_offload_cpu.json adamw 1 2)
expect_match(offload_cpu "${rank0}offload: [^\n]*offload_optimizer.device cpu"
             "rank 0's offload line with device cpu")
expect_match(offload_cpu "${rank0}offload: optimizer state: host memory, "
             "the state in host memory")
# pin_memory true: pinned, unless the host refused (RLIMIT_MEMLOCK), which the plugin must say.
if(NOT offload_cpu_out MATCHES "offload: optimizer state: host memory, [^\n]* pinned")
  expect_match(offload_cpu "it stays pageable" "pinned state, or the warning that it is not")
endif()
expect_no_match(zero2 "optimizer state: host memory, [^\n]* pinned" "pinned state without offload")
params(same zero2 offload_cpu 1e-6 "where the optimizer state lives does not change the step")

# Optimizer state and parameter partition on the drive (nvme_path inside WORK_DIR, not the
# example's /tmp): same parameters as stage 3 without offload, and no files left behind.
set(nvme_dir "${WORK_DIR}/nvme")
file(MAKE_DIRECTORY "${nvme_dir}")
file(READ "${MANIFEST_DIR}/zero3_offload_nvme.json" text)
string(JSON text SET "${text}" zero_optimization offload_optimizer nvme_path "\"${nvme_dir}\"")
string(JSON text SET "${text}" zero_optimization offload_param nvme_path "\"${nvme_dir}\"")
file(WRITE "${WORK_DIR}/zero3_offload_nvme.json" "${text}")
run_ok(offload_nvme "${WORK_DIR}/zero3_offload_nvme.json" adamw 1 3)
expect_match(offload_nvme "${rank0}offload: [^\n]*offload_optimizer.device nvme"
             "rank 0's offload line with device nvme")
regex_quote("${nvme_dir}" nvme_regex)
expect_match(offload_nvme "${rank0}offload: optimizer state: [^\n]* in ${nvme_regex} "
             "the state in ${nvme_dir}")
expect_match(offload_nvme "${rank0}offload: parameter partition \\(offload_param nvme\\): [^\n]* in ${nvme_regex} "
             "the parameter partition in ${nvme_dir}")
file(GLOB left "${nvme_dir}/*")
if(left)
  message(FATAL_ERROR "offload_nvme: files left in ${nvme_dir} after the run: ${left}")
endif()
params(same zero3 offload_nvme 1e-6 "where the optimizer state lives does not change the step")

file(SHA256 "${BINARY}" sha_after)
if(NOT sha_after STREQUAL sha_before)
  message(FATAL_ERROR "fashion_mnist changed during the test: ${sha_before} -> ${sha_after}")
endif()
message(STATUS "14 runs with 13 manifests and one rejected manifest, "
               "binary unchanged (${sha_after})")
