# Finds every library Strata builds against (all from Debian) before any target is defined, and
# when some are missing stops with ONE message that lists the Debian packages to install and the
# command that installs them, rather than the first find_package's trace. `pip install .` and a
# plain cmake configure show the same message. The layers' own find_package/pkg_check_modules calls
# (plugins, checkpoint) then only find what this file has checked.
#
# A find_package can be switched off with CMake's CMAKE_DISABLE_FIND_PACKAGE_<Name>=TRUE; the
# tests (tests/install) do that to see this message on a machine that has every package.

set(strata_missing_packages "")

# strata_require(<debian packages> <found?>): records the packages when the probe found nothing.
macro(strata_require packages found)
  if(NOT ${found})
    list(APPEND strata_missing_packages ${packages})
  endif()
endmacro()

find_package(MPI QUIET COMPONENTS C)
strata_require("libopenmpi-dev" MPI_C_FOUND)
find_program(STRATA_MPIRUN_PROGRAM NAMES mpirun)  # strata-run's mpi backend and the tests run it
strata_require("openmpi-bin" STRATA_MPIRUN_PROGRAM)
find_package(Boost 1.74 QUIET COMPONENTS filesystem)
strata_require("libboost-dev;libboost-filesystem-dev" Boost_FOUND)
find_package(spdlog QUIET)
strata_require("libspdlog-dev" spdlog_FOUND)
find_package(nlohmann_json 3.10 QUIET)
strata_require("nlohmann-json3-dev" nlohmann_json_FOUND)
find_package(OpenSSL QUIET COMPONENTS Crypto)
strata_require("libssl-dev" OpenSSL_FOUND)
find_package(ZLIB QUIET)
strata_require("zlib1g-dev" ZLIB_FOUND)
find_package(CLI11 QUIET)
strata_require("libcli11-dev" CLI11_FOUND)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS QUIET)
strata_require("libopenblas-dev" BLAS_FOUND)
find_package(hwy QUIET)
strata_require("libhwy-dev" hwy_FOUND)
find_package(Gloo CONFIG QUIET)
strata_require("libgloo-dev" Gloo_FOUND)
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(STRATA_PROBE_XXHASH QUIET libxxhash)
  strata_require("libxxhash-dev" STRATA_PROBE_XXHASH_FOUND)
  pkg_check_modules(STRATA_PROBE_LIBURING QUIET liburing)
  strata_require("liburing-dev" STRATA_PROBE_LIBURING_FOUND)
else()
  # Without pkg-config these two cannot be probed: name them too (installing one already there
  # costs nothing), so that one message still lists all that is needed.
  list(APPEND strata_missing_packages pkg-config libxxhash-dev liburing-dev)
endif()
if(STRATA_BUILD_TESTS)
  find_package(GTest QUIET)
  strata_require("libgtest-dev;libgmock-dev" GTest_FOUND)
endif()

if(strata_missing_packages)
  list(REMOVE_DUPLICATES strata_missing_packages)
  string(JOIN " " strata_missing_text ${strata_missing_packages})
  message(FATAL_ERROR
    "Strata cannot be built: these Debian packages are missing:\n"
    "  ${strata_missing_text}\n"
    "Install them with:\n"
    "  sudo apt-get update && sudo apt-get install -y ${strata_missing_text}\n"
    "(scripts/install-deps.sh in the source tree installs everything the build and tests need.)")
endif()
find_package(Threads REQUIRED)
