# Whether this folder builds the GPU mode: STRATA_HAVE_CUDA, decided by cmake/StrataCuda.cmake at
# the top level (option STRATA_CUDA: AUTO/ON/OFF). Until that module is included, the same decision
# is taken here; included from examples/fashion_mnist/CMakeLists.txt, the folder of every target that
# compiles or links CUDA code (enable_language must be called there, at file scope).
set(fmnist_cuda_local_setup OFF)
if(NOT DEFINED STRATA_HAVE_CUDA)
  set(fmnist_want_cuda AUTO)
  if(DEFINED STRATA_CUDA)
    set(fmnist_want_cuda ${STRATA_CUDA})
  endif()
  set(STRATA_HAVE_CUDA OFF)
  if(NOT fmnist_want_cuda STREQUAL "OFF")
    include(CheckLanguage)
    check_language(CUDA)
    find_package(CUDAToolkit QUIET)
    if(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND)
      if(NOT CMAKE_CUDA_ARCHITECTURES)
        set(CMAKE_CUDA_ARCHITECTURES 80-real 90-real 90-virtual)
      endif()
      enable_language(CUDA)
      set(STRATA_HAVE_CUDA ON)
      set(fmnist_cuda_local_setup ON)
    elseif(fmnist_want_cuda STREQUAL "ON")
      message(FATAL_ERROR "STRATA_CUDA=ON but nvcc or the CUDA toolkit was not found "
                          "(set CUDACXX or put nvcc on the PATH)")
    endif()
  endif()
endif()

