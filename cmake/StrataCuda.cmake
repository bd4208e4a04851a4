# The CUDA build: STRATA_CUDA=AUTO (default) turns it on when nvcc, the CUDA toolkit and NCCL are
# all found, ON requires them (configure fails naming what is missing), OFF never looks.
# Sets STRATA_HAVE_CUDA (ON/OFF) for the rest of the build; when ON, the CUDA language is enabled
# for sm_80 and sm_90 code plus sm_90 PTX (which later GPUs compile at load), nvcc warnings are
# errors with STRATA_WERROR, and the imported target strata::nccl exists.
set(STRATA_CUDA AUTO CACHE STRING "Build the CUDA kernels and NCCL plugin: AUTO, ON or OFF")
set_property(CACHE STRATA_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${STRATA_CUDA}" _strata_cuda)
if(NOT _strata_cuda MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "STRATA_CUDA: expected AUTO, ON or OFF, got '${STRATA_CUDA}'")
endif()

set(STRATA_HAVE_CUDA OFF)
set(_strata_cuda_missing "")
if(_strata_cuda STREQUAL "OFF")
  set(_strata_cuda_why "switched off")
else()
  # nvcc: CUDACXX or CMAKE_CUDA_COMPILER if given, else the PATH, else the toolkit's usual home.
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(STRATA_NVCC nvcc PATHS /usr/local/cuda/bin)
    if(STRATA_NVCC)
      set(CMAKE_CUDA_COMPILER ${STRATA_NVCC})
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    list(APPEND _strata_cuda_missing "nvcc (set CUDACXX or put it on the PATH)")
  else()
    # The toolkit that nvcc belongs to (not another one found first elsewhere). nvcc names its own
    # home as TOP= in --dryrun: the nvcc on the PATH may be a wrapper script in /usr/local/bin, whose
    # parent folder holds some of the toolkit's files but not all of them (no NCCL, for one).
    if(NOT DEFINED CUDAToolkit_ROOT)
      execute_process(COMMAND ${CMAKE_CUDA_COMPILER} --dryrun -c strata_probe.cu
        OUTPUT_VARIABLE _strata_nvcc_dryrun ERROR_VARIABLE _strata_nvcc_dryrun)
      if(_strata_nvcc_dryrun MATCHES "TOP=([^\r\n]*)")
        get_filename_component(CUDAToolkit_ROOT "${CMAKE_MATCH_1}" REALPATH)
      else()
        get_filename_component(CUDAToolkit_ROOT ${CMAKE_CUDA_COMPILER} DIRECTORY)
        get_filename_component(CUDAToolkit_ROOT ${CUDAToolkit_ROOT} DIRECTORY)
      endif()
    endif()
    find_package(CUDAToolkit QUIET)
    if(NOT CUDAToolkit_FOUND)
      list(APPEND _strata_cuda_missing "the CUDA toolkit's headers and libraries (CUDAToolkit)")
    else()
      find_path(STRATA_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS}
        ${CUDAToolkit_LIBRARY_ROOT}/include)
      find_library(STRATA_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR}
        ${CUDAToolkit_LIBRARY_ROOT}/lib64)
      if(NOT STRATA_NCCL_INCLUDE_DIR OR NOT STRATA_NCCL_LIBRARY)
        list(APPEND _strata_cuda_missing
          "NCCL (nccl.h and libnccl beside the CUDA toolkit ${CUDAToolkit_LIBRARY_DIR})")
      endif()
    endif()
  endif()
  if(_strata_cuda_missing)
    list(JOIN _strata_cuda_missing ", " _strata_cuda_why)
    set(_strata_cuda_why "not found: ${_strata_cuda_why}")
    if(_strata_cuda STREQUAL "ON")
      message(FATAL_ERROR "STRATA_CUDA=ON, but ${_strata_cuda_why}")
    endif()
  else()
    set(STRATA_HAVE_CUDA ON)
    set(_strata_cuda_why "nvcc ${CMAKE_CUDA_COMPILER}, CUDA ${CUDAToolkit_VERSION}, NCCL ${STRATA_NCCL_LIBRARY}")
  endif()
endif()

if(STRATA_HAVE_CUDA)
  if(NOT CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80-real 90-real 90-virtual)
  endif()
  enable_language(CUDA)
  # C++17: CMake 3.25 knows no C++20 flag for nvcc 13 ("CUDA20" dialect unsupported).
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  # One CUDA runtime in the process: the shared libcudart that CUDA::cudart names everywhere else
  # (CMake's default for CUDA targets is the static one, which put both on consumers' link lines).
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  # The host compiler's warnings on the host half of .cu files; nvcc's own as errors too.
  add_compile_options($<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  if(STRATA_WERROR)
    add_compile_options("$<$<COMPILE_LANGUAGE:CUDA>:SHELL:-Werror all-warnings>"
      $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Werror>)
  endif()

  add_library(strata::nccl UNKNOWN IMPORTED)
  set_target_properties(strata::nccl PROPERTIES
    IMPORTED_LOCATION ${STRATA_NCCL_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${STRATA_NCCL_INCLUDE_DIR})
  target_link_libraries(strata::nccl INTERFACE CUDA::cudart)
endif()
message(STATUS "Strata CUDA: ${STRATA_HAVE_CUDA} (STRATA_CUDA=${_strata_cuda}; ${_strata_cuda_why})")
