# Checks that every installed header stands alone on the standard and C libraries, then builds
# tests/abi/out_of_tree (with the plugin template, examples/plugin_template) against an
# installed Strata with find_package(Strata CONFIG), runs its host with the template plugin as the
# offload stratum, and runs the installed strata-plugin-check on the template plugin: the loop
# README.md's "Writing a plugin" shows.
#
# Run by ctest as abi.out_of_tree (see CMakeLists.txt) with -D STRATA_BUILD_DIR, PROJECT_DIR,
# TEMPLATE_DIR, WORK_DIR, GENERATOR, C_COMPILER, CXX_COMPILER, SANITIZE, MPIRUN ('|'-separated): it
# installs the build into a scratch prefix and checks that. tests/packaging/check_deb.cmake
# includes this file for run() and check_out_of_tree(), and checks the tree extracted from the .deb.
function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}")
  endif()
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

# check_installed_headers(<prefix>): every header under <prefix>/include compiles on its own with
# nothing but -I<prefix>/include (as C++17, and a .h also as C99), and includes nothing beyond the
# installed headers, the C++ standard library and the C library/kernel headers: no OpenSSL, no
# Highway, no header the install left out (which would not be found). Reads C_COMPILER and
# CXX_COMPILER; writes a one-line source file next to <prefix>.
function(check_installed_headers prefix)
  get_filename_component(installed "${prefix}/include" REALPATH)
  file(GLOB_RECURSE headers LIST_DIRECTORIES false "${installed}/*.h" "${installed}/*.hpp")
  list(LENGTH headers count)
  if(count LESS 5)
    message(FATAL_ERROR "${installed} holds ${count} headers; expected the runtime's and SDK's")
  endif()
  # What a header may depend on besides the installed headers: the compiler's own folders (as it
  # lists them, less /usr/include and /usr/local/include, where any library's headers live), the
  # C library's and the kernel's headers (top-level .h files and these folders of /usr/include).
  set(system_dirs "^/usr/include/c[+][+]/" "^/usr/lib/gcc/" "^/usr/lib/llvm-[0-9]+/"
      "^/usr/include/[a-z0-9_]+-linux-gnu/"
      "^/usr/include/(sys|bits|linux|asm|asm-generic|arpa|netinet|net|rpc)/"
      "^/usr/include/[^/]+[.]h$")
  foreach(compiler ${C_COMPILER} ${CXX_COMPILER})
    execute_process(COMMAND ${compiler} -E -Wp,-v -x c /dev/null
                    OUTPUT_QUIET ERROR_VARIABLE search RESULT_VARIABLE rc)
    string(REGEX MATCH "search starts here:\n(.*)\nEnd of search list" search "${search}")
    string(REGEX MATCHALL "[^\n ]+" dirs "${CMAKE_MATCH_1}")
    foreach(dir IN LISTS dirs)
      get_filename_component(dir "${dir}" REALPATH)
      if(NOT dir MATCHES "^/usr(/local)?/include$")
        string(REGEX REPLACE "([][+.*()^$?|\\])" "\\\\\\1" escaped "${dir}")
        list(APPEND system_dirs "^${escaped}/")
      endif()
    endforeach()
  endforeach()
  get_filename_component(scratch "${prefix}/../header_check" ABSOLUTE)
  file(MAKE_DIRECTORY "${scratch}")
  get_filename_component(scratch "${scratch}" REALPATH)  # dependencies are compared as real paths
  foreach(header IN LISTS headers)
    set(languages "cpp|-std=c++17|${CXX_COMPILER}")
    if(header MATCHES "[.]h$")
      list(APPEND languages "c|-std=c99|${C_COMPILER}")
    endif()
    foreach(language IN LISTS languages)
      string(REPLACE "|" ";" language "${language}")
      list(GET language 0 ext)
      list(GET language 1 std)
      list(GET language 2 compiler)
      # Included from a source file, as a user includes it (not compiled as the main file).
      file(WRITE "${scratch}/one.${ext}" "#include \"${header}\"\n")
      execute_process(COMMAND ${compiler} ${std} -Wall -Wextra -Werror -fsyntax-only -MD
                              -MF ${scratch}/one.d -I${installed} ${scratch}/one.${ext}
                      RESULT_VARIABLE rc ERROR_VARIABLE err)
      if(NOT rc EQUAL 0)
        message(FATAL_ERROR "installed header ${header} does not compile on its own with only "
                            "-I${installed} (${std}):\n${err}")
      endif()
      file(READ "${scratch}/one.d" deps)
      string(REPLACE "\\\n" " " deps "${deps}")
      string(REGEX REPLACE "^[^:]*:" "" deps "${deps}")
      separate_arguments(deps UNIX_COMMAND "${deps}")
      foreach(dep IN LISTS deps)
        get_filename_component(dep "${dep}" REALPATH)
        if(dep STREQUAL "${scratch}/one.${ext}")
          continue()
        endif()
        string(FIND "${dep}" "${installed}/" at)
        set(allowed FALSE)
        if(at EQUAL 0)
          set(allowed TRUE)
        endif()
        foreach(pattern IN LISTS system_dirs)
          if(dep MATCHES "${pattern}")
            set(allowed TRUE)
          endif()
        endforeach()
        if(NOT allowed)
          message(FATAL_ERROR "installed header ${header} includes ${dep}, which is neither an "
                              "installed Strata header nor a system header: a user of the "
                              "installed SDK would need a dependency the CMake package does not "
                              "declare")
        endif()
      endforeach()
    endforeach()
  endforeach()
  message(STATUS "check_installed_headers: ${count} installed headers stand alone on the C++ "
                 "standard library and the C library")
endfunction()

# check_out_of_tree(<prefix> <work dir> <ranks> <launcher...>): builds the project in <work dir>
# against <prefix>, runs oot_host as `<launcher...> oot_host <plugin>`, which must start <ranks>
# ranks, and runs <prefix>/bin/strata-plugin-check. Reads PROJECT_DIR, TEMPLATE_DIR, GENERATOR,
# C_COMPILER, CXX_COMPILER and SANITIZE.
function(check_out_of_tree prefix work_dir ranks)
  check_installed_headers(${prefix})
  set(configure_args -S ${PROJECT_DIR} -B ${work_dir}/build -G ${GENERATOR}
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
  run("build" ${CMAKE_COMMAND} --build ${work_dir}/build -j 2)

  set(plugin ${work_dir}/build/plugin_template/libmy_sgd.so)
  run("oot_host" ${ARGN} ${work_dir}/build/oot_host ${plugin})
  message(STATUS "${run_output}")
  # The update alone could come from another SGD; the plugin's own log line proves which ran.
  string(FIND "${run_output}" "my_sgd: plain SGD, lr 0.5" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "oot_host output lacks 'my_sgd: plain SGD, lr 0.5'")
  endif()
  string(REGEX MATCHALL "oot_host: SGD update matches" matches "${run_output}")
  list(LENGTH matches count)
  if(NOT count EQUAL ranks)
    message(FATAL_ERROR "'oot_host: SGD update matches' printed by ${count} ranks, expected ${ranks}")
  endif()

  # The installed checker on the template plugin: every check passes or is skipped, and the SGD
  # the plugin claims was checked against the reference.
  run("strata-plugin-check" ${prefix}/bin/strata-plugin-check ${plugin} --junit ${work_dir}/check.xml)
  message(STATUS "${run_output}")
  foreach(expected "PASS offload\\.optimizer\\.sgd" " 0 failed")
    if(NOT run_output MATCHES "${expected}")
      message(FATAL_ERROR "strata-plugin-check output lacks '${expected}'")
    endif()
  endforeach()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)  # run with -P, not included
  file(REMOVE_RECURSE ${WORK_DIR})
  run("install" ${CMAKE_COMMAND} --install ${STRATA_BUILD_DIR} --prefix ${WORK_DIR}/prefix)
  string(REPLACE "|" ";" mpirun "${MPIRUN}")
  check_out_of_tree(${WORK_DIR}/prefix ${WORK_DIR} 1 ${mpirun} -np 1)
endif()
