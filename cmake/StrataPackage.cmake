# The Debian package: `cpack -G DEB` in a build folder writes strata_<version>_<arch>.deb with
# everything `cmake --install` puts in a prefix (libstrata, the plugins, the tools, the headers and
# the CMake package), installed under /usr. tests/packaging builds it, extracts it and uses it.
#
# The package reuses the build's relative install folders. CMAKE_INSTALL_LIBDIR is "lib" for the
# default prefix /usr/local, or lib/<multiarch> when configured with CMAKE_INSTALL_PREFIX=/usr on
# Debian: under /usr both are folders the dynamic loader searches, and the plugin folder
# (<libdir>/strata/plugins), the tools' RUNPATH ($ORIGIN/../<libdir>) and strata-run's
# STRATA_RUN_INSTALL_LIBDIR are all computed from that same value, so they agree inside the package.
if(NOT CMAKE_INSTALL_LIBDIR MATCHES "^lib(/${CMAKE_LIBRARY_ARCHITECTURE})?$")
  message(WARNING "CMAKE_INSTALL_LIBDIR is '${CMAKE_INSTALL_LIBDIR}': the .deb would put libstrata "
                  "in /usr/${CMAKE_INSTALL_LIBDIR}, where the dynamic loader does not look; use lib "
                  "or lib/${CMAKE_LIBRARY_ARCHITECTURE}")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME strata)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "Strata maintainers <lead@strata.dev>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "Distributed deep-learning training runtime with a stable C ABI and plugins")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Debian's own naming: strata_0.2.0_amd64.deb.
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# A package ships stripped binaries (a build tree with debug information keeps it).
set(CPACK_STRIP_FILES ON)

# Shared-library dependencies (libopenmpi3, libgloo0, libboost-filesystem, libspdlog, ...) come
# from dpkg-shlibdeps over every ELF file in the package. Without dpkg-shlibdeps CPack would
# silently declare only the list below; tests/packaging fails in that case.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Not shared libraries: strata-run's default backend runs mpirun. StrataConfig.cmake has no
# find_dependency(), so consumers of the CMake package need no -dev package from us.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "openmpi-bin")
if(STRATA_HAVE_CUDA)
  # A CUDA build links libcudart (libstrata itself), libcublas (the example) and libnccl (the NCCL
  # plugin) from a toolkit no Debian package owns here (/usr/local/cuda). dpkg-shlibdeps must find
  # them to read them (-l), and CPack passes it --ignore-missing-info, so it declares nothing for
  # them: declare NVIDIA's packages of the same libraries (its CUDA apt repository) ourselves, or
  # the package would install on a machine without CUDA and fail to load there.
  # (For a package without CUDA, configure with -DSTRATA_CUDA=OFF.)
  get_filename_component(strata_nccl_dir "${STRATA_NCCL_LIBRARY}" DIRECTORY)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CUDAToolkit_LIBRARY_DIR} ${strata_nccl_dir})
  set(strata_cuda_suffix "${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}")
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS
         ", cuda-cudart-${strata_cuda_suffix}, libcublas-${strata_cuda_suffix}, libnccl2")
endif()
# What a plugin author is likely to need beside the SDK: the plugin template reads its config with
# nlohmann/json. (The installed headers themselves need nothing but the C library and the C++
# standard library: abi.out_of_tree checks that.)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nlohmann-json3-dev, cmake")

include(CPack)
