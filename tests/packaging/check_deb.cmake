# Builds the .deb from the build tree with cpack, checks its control fields and file list, extracts
# it with dpkg-deb -x into a scratch root and uses it from there with LD_LIBRARY_PATH unset: the
# programs find the extracted libstrata, a 2-rank job started by the extracted strata-run,
# tests/abi's out-of-tree project (the plugin template and a C host) built against the extracted
# CMake package and checked by the extracted strata-plugin-check, and each tool's --version.
# Run by ctest as packaging.deb (see CMakeLists.txt) with -D BUILD_DIR, WORK_DIR, VERSION,
# MULTIARCH, BINARIES and PLUGINS ('|'-separated), and what run_out_of_tree.cmake reads.
cmake_minimum_required(VERSION 3.25)  # IN_LIST, file(REAL_PATH), find_program(NO_CACHE)
include(${CMAKE_CURRENT_LIST_DIR}/../abi/run_out_of_tree.cmake)  # run(), check_out_of_tree()

# Without dpkg-shlibdeps, cpack would quietly declare none of the shared-library dependencies; and
# CPack's DEB generator needs `file` to find the ELF files to hand it.
foreach(entry "dpkg-deb|dpkg" "dpkg-shlibdeps|dpkg-dev" "file|file")
  string(REPLACE "|" ";" entry "${entry}")
  list(GET entry 0 program)
  list(GET entry 1 package)
  find_program(path ${program} NO_CACHE)
  if(NOT path)
    message(FATAL_ERROR "${program} not found: it comes with the Debian package ${package} "
                        "(apt-get install ${package})")
  endif()
  unset(path)
endforeach()

file(REMOVE_RECURSE ${WORK_DIR})
run("cpack" ${CMAKE_CPACK_COMMAND} -G DEB --config ${BUILD_DIR}/CPackConfig.cmake -B ${WORK_DIR}/cpack)
file(GLOB deb ${WORK_DIR}/cpack/strata_${VERSION}_*.deb)
list(LENGTH deb count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "expected one strata_${VERSION}_<arch>.deb from cpack, found '${deb}':\n${run_output}")
endif()
file(SIZE ${deb} size)
message(STATUS "${deb}: ${size} bytes")

# ---- control fields: dpkg-shlibdeps's libraries and our own additions ----------------------------
run("dpkg-deb -f" dpkg-deb -f ${deb} Depends)
message(STATUS "Depends: ${run_output}")
set(dependencies libopenmpi libgloo libboost-filesystem libspdlog libssl libstdc\\+\\+ libc6 openmpi-bin)
if(CUDA)  # a CUDA build's libstrata needs libcudart, which no Debian package of this machine owns
  list(APPEND dependencies cuda-cudart- libcublas- libnccl2)
endif()
foreach(dependency IN LISTS dependencies)
  if(NOT run_output MATCHES "(^|, )${dependency}")
    message(FATAL_ERROR "Depends lacks ${dependency}: ${run_output}")
  endif()
endforeach()

# ---- the files: libstrata, plugins, tools, headers, CMake package; nothing from the tests -------
run("dpkg-deb -c" dpkg-deb -c ${deb})
set(listing "${run_output}")
string(REGEX MATCHALL "\\./usr/[^ \n]*" files "${listing}")
set(libdir "")
foreach(candidate lib lib/${MULTIARCH})  # the folders Debian's loader searches under /usr
  if("./usr/${candidate}/libstrata.so" IN_LIST files)
    set(libdir ${candidate})
  endif()
endforeach()
if(NOT libdir)
  message(FATAL_ERROR "libstrata.so is in neither /usr/lib nor /usr/lib/${MULTIARCH}:\n${listing}")
endif()
string(REPLACE "|" ";" binaries "${BINARIES}")
string(REPLACE "|" ";" plugins "${PLUGINS}")
set(expected ./usr/${libdir}/libstrata.so.${VERSION} ./usr/include/strata/strata.h
             ./usr/include/strata/plugin_api.h ./usr/${libdir}/cmake/Strata/StrataConfig.cmake)
foreach(binary IN LISTS binaries)
  list(APPEND expected ./usr/bin/${binary})
endforeach()
foreach(plugin IN LISTS plugins)
  list(APPEND expected ./usr/${libdir}/strata/plugins/lib${plugin}.so)
endforeach()
foreach(file IN LISTS expected)
  if(NOT file IN_LIST files)
    message(FATAL_ERROR "the package lacks ${file}:\n${listing}")
  endif()
endforeach()
# Exactly these programs and plugins: a test host or fixture plugin would show up here.
foreach(file IN LISTS files)
  if((file MATCHES "^\\./usr/bin/." OR file MATCHES "/strata/plugins/.") AND NOT file IN_LIST expected)
    message(FATAL_ERROR "the package holds ${file}, which is not one of Strata's programs or plugins")
  endif()
  if(file MATCHES "strata[-_]test")
    message(FATAL_ERROR "the package holds a test file: ${file}")
  endif()
endforeach()

# ---- the extracted tree, with nothing in the environment pointing at the build tree --------------
run("dpkg-deb -x" dpkg-deb -x ${deb} ${WORK_DIR}/root)
file(REAL_PATH ${WORK_DIR}/root/usr usr)  # as /proc/self/exe and the loader spell it
foreach(variable LD_LIBRARY_PATH STRATA_PLUGIN_PATH STRATA_LIBRARY)
  unset(ENV{${variable}})
endforeach()

# The programs' RUNPATH ($ORIGIN/../<libdir>) finds the extracted libstrata, not another one.
string(REGEX MATCH "^[0-9]+" major "${VERSION}")
file(REAL_PATH ${usr}/${libdir}/libstrata.so.${major} extracted_library)
set(linked 0)
foreach(binary IN LISTS binaries)
  run("ldd ${binary}" ldd ${usr}/bin/${binary})
  if(run_output MATCHES "not found")
    message(FATAL_ERROR "${binary} misses a library:\n${run_output}")
  endif()
  if(run_output MATCHES "libstrata\\.so\\.${major} => ([^ \n]+)")
    file(REAL_PATH "${CMAKE_MATCH_1}" loaded)  # ldd prints the RUNPATH's bin/../lib as it is
    if(NOT loaded STREQUAL extracted_library)
      message(FATAL_ERROR "${binary} loads ${loaded}, not ${extracted_library}:\n${run_output}")
    endif()
    math(EXPR linked "${linked} + 1")
  endif()
endforeach()
if(linked EQUAL 0)
  message(FATAL_ERROR "none of ${binaries} links libstrata: the RUNPATH check checked nothing")
endif()

# strata-run hands each rank the libstrata beside it (STRATA_RUN_INSTALL_LIBDIR) as STRATA_LIBRARY.
set(launch ${usr}/bin/strata-run -np 2 --)
run("strata-run env" ${launch} env)
string(REGEX MATCHALL "STRATA_LIBRARY=[^\n]*" libraries "${run_output}")
set(want "STRATA_LIBRARY=${usr}/${libdir}/libstrata.so")
if(NOT libraries STREQUAL "${want};${want}")
  message(FATAL_ERROR "expected '${want}' from both ranks, got '${libraries}':\n${run_output}")
endif()

# A 2-rank job of a host and plugin built against the package: the extracted runtime finds its
# comm/sharding/precision plugins in <libdir>/strata/plugins; then the extracted plugin checker.
check_out_of_tree(${usr} ${WORK_DIR}/out_of_tree 2 ${launch})

# Each tool says the project's version ("strata-ckpt 0.2.0").
string(REPLACE "." "\\." version_pattern "${VERSION}")
foreach(tool strata-run strata-ckpt strata-plugin-check)
  run("${tool} --version" ${usr}/bin/${tool} --version)
  if(NOT run_output MATCHES "^${tool}[^\n]* v?${version_pattern}\n?$")
    message(FATAL_ERROR "${tool} --version printed '${run_output}', expected '${tool} ${VERSION}'")
  endif()
endforeach()
