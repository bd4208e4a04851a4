# Installs the Strata build into a scratch prefix, builds tests/abi/out_of_tree against it with
# find_package(Strata CONFIG), and runs its host with the out-of-tree plugin as the offload
# stratum. Run by ctest (see CMakeLists.txt) with -D STRATA_BUILD_DIR, PROJECT_DIR, WORK_DIR,
# GENERATOR, C_COMPILER, CXX_COMPILER, SANITIZE, MPIRUN ('|'-separated).
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run("install" ${CMAKE_COMMAND} --install ${STRATA_BUILD_DIR} --prefix ${prefix})

set(configure_args -S ${PROJECT_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=RelWithDebInfo
    -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
if(SANITIZE)
  # A host linking an instrumented libstrata must itself be instrumented (runtime goes first).
  set(flags "-fsanitize=${SANITIZE} -fno-omit-frame-pointer")
  list(APPEND configure_args -DCMAKE_C_FLAGS=${flags} -DCMAKE_CXX_FLAGS=${flags}
       -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZE}
       -DCMAKE_MODULE_LINKER_FLAGS=-fsanitize=${SANITIZE})
endif()
run("configure" ${CMAKE_COMMAND} ${configure_args})
run("build" ${CMAKE_COMMAND} --build ${WORK_DIR}/build -j 2)

string(REPLACE "|" ";" mpirun "${MPIRUN}")
run("oot_host" ${mpirun} -np 1 ${WORK_DIR}/build/oot_host ${WORK_DIR}/build/liboot_sgd.so)
message(STATUS "${run_output}")
# The update alone could come from another SGD; the plugin's own log line proves which ran.
foreach(expected "oot_sgd: plain SGD, lr 0.5" "oot_host: SGD update matches")
  string(FIND "${run_output}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "oot_host output lacks '${expected}'")
  endif()
endforeach()
