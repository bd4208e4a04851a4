# Installs the Strata build into a scratch prefix, builds tests/abi/out_of_tree (with the plugin
# template, examples/plugin_template) against it with find_package(Strata CONFIG), runs its host
# with the template plugin as the offload stratum, and runs the installed strata-plugin-check on
# the template plugin: the loop README.md's "Writing a plugin" shows. Run by ctest (see
# CMakeLists.txt) with -D STRATA_BUILD_DIR, PROJECT_DIR, TEMPLATE_DIR, WORK_DIR, GENERATOR,
# C_COMPILER, CXX_COMPILER, SANITIZE, MPIRUN ('|'-separated).
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
    -DSTRATA_PLUGIN_TEMPLATE_DIR=${TEMPLATE_DIR}
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
set(plugin ${WORK_DIR}/build/plugin_template/libmy_sgd.so)
run("oot_host" ${mpirun} -np 1 ${WORK_DIR}/build/oot_host ${plugin})
message(STATUS "${run_output}")
# The update alone could come from another SGD; the plugin's own log line proves which ran.
foreach(expected "my_sgd: plain SGD, lr 0.5" "oot_host: SGD update matches")
  string(FIND "${run_output}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "oot_host output lacks '${expected}'")
  endif()
endforeach()

# The installed checker on the template plugin: every check passes or is skipped, and the SGD
# the plugin claims was checked against the reference.
run("strata-plugin-check" ${prefix}/bin/strata-plugin-check ${plugin} --junit ${WORK_DIR}/check.xml)
message(STATUS "${run_output}")
foreach(expected "PASS offload\\.optimizer\\.sgd" " 0 failed")
  if(NOT run_output MATCHES "${expected}")
    message(FATAL_ERROR "strata-plugin-check output lacks '${expected}'")
  endif()
endforeach()
