# "Swap without rebuilding" (cmake -P): one fashion_mnist binary, several manifests. Checks that
#  - the binary's sha256 is the same before and after all runs (nothing was rebuilt or patched),
#  - each run loaded what its manifest names (the runtime's "plugins:" line on rank 0) and split
#    the batch as it says (the host's own start-up line),
#  - different optimizers end with different parameters (and AdamW/SGD with different losses),
#    and so does switching gradient clipping off,
#  - the same manifest twice gives identical bytes, and so does a manifest that only changes how
#    gradients are bucketed (on 2 ranks a sum is a+b whatever the grouping),
#  - a manifest naming an unknown optimizer makes the host print "error: ..." and exit 1.
#
# Inputs: MPIRUN (comma-separated), BINARY, MANIFEST_DIR, WORK_DIR, DATA_DIR, STEPS.
string(REPLACE "," ";" mpirun "${MPIRUN}")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
file(SHA256 "${BINARY}" sha_before)
message(STATUS "fashion_mnist sha256 ${sha_before}")

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

# A successful run of `manifest` whose runtime reports `optimizer` and whose host splits the
# global batch of 256 over 2 ranks as micro × `accumulation`. Sets <tag>_loss.
function(run_ok tag manifest optimizer accumulation)
  if(NOT IS_ABSOLUTE "${manifest}")
    set(manifest "${MANIFEST_DIR}/${manifest}")
  endif()
  run(${tag} "${manifest}")
  if(NOT ${tag}_rc EQUAL 0)
    message(FATAL_ERROR "${tag} (${manifest}) failed with ${${tag}_rc}:\n${${tag}_out}")
  endif()
  expect_match(${tag} "plugins: comm=[^ ]+ sharding=[^ ]+ precision=[^ ]+ offload=[^ ]+ optimizer=${optimizer} stage=0"
               "the runtime's plugins line with optimizer=${optimizer}")
  math(EXPR micro "256 / (2 * ${accumulation})")
  expect_match(${tag} "global batch 256 = micro ${micro} x accumulation ${accumulation} x 2 ranks"
               "the batch split of the manifest")
  expect_match(${tag} "step ${STEPS}  train_loss [0-9.]+" "a final line after ${STEPS} steps")
  string(REGEX MATCH "step ${STEPS}  train_loss ([0-9.]+)" unused "${${tag}_out}")
  set(${tag}_loss "${CMAKE_MATCH_1}" PARENT_SCOPE)
  message(STATUS "${tag}: ${manifest} -> optimizer=${optimizer}, train_loss ${CMAKE_MATCH_1}")
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

file(SHA256 "${BINARY}" sha_after)
if(NOT sha_after STREQUAL sha_before)
  message(FATAL_ERROR "fashion_mnist changed during the test: ${sha_before} -> ${sha_after}")
endif()
message(STATUS "7 runs with 6 manifests and one rejected manifest, binary unchanged (${sha_after})")
