# CUDA device parameters (issue 16): where the parameters are against what the comm plugin moves,
# refused at finalize before any parameter memory is touched, so these run without a GPU. The probe
# registers CUDA parameters with fake pointers (--device) that would crash if dereferenced.

# A one-rank comm plugin whose caps say CUDA device memory only (as allreduce-nccl's do).
strata_add_plugin(strata_test_comm_cuda_only SOURCES comm_cuda_only.cpp)
set_target_properties(strata_test_comm_cuda_only PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${STRATA_TEST_FIXTURE_DIR})
add_dependencies(strata_probe_host strata_test_comm_cuda_only)

strata_catalogue_case(device_host_params_cuda_only_comm 1 comm_cuda_only.json
  "finalize: parameters are in host memory \\('w0'\\), but comm plugin 'test-comm-cuda-only' moves CUDA device memory only")

get_property(runtime_has_cuda GLOBAL PROPERTY STRATA_RUNTIME_HAS_CUDA)
if(runtime_has_cuda)
  # Open MPI on these machines is built without CUDA support (MPIX_CUDA_AWARE_SUPPORT 0).
  strata_catalogue_case(device_cuda_params_mpi_not_cuda_aware 2 good.json
    "finalize: parameter 'w0' is in cuda:0 memory, but comm plugin 'allreduce-mpi' moves host memory only. use allreduce-nccl or allreduce-mpi over a CUDA-aware MPI"
    --device cuda:0)
  strata_catalogue_case(device_params_on_two_devices 1 comm_cuda_only.json
    "finalize: parameter 'w0' is in cuda:0 memory but parameter 'w1' is in cuda:1 memory. register every parameter on the same device"
    --device cuda:0 --second-device cuda:1)
  strata_catalogue_case(device_params_host_and_cuda 1 comm_cuda_only.json
    "finalize: parameter 'w0' is in cuda:0 memory but parameter 'w1' is in host memory"
    --device cuda:0 --second-device host)
else()
  strata_catalogue_case(device_param_without_cuda 1 good.json
    "register_param 'w0': the parameter is in cuda:0 memory, but this libstrata was built without CUDA \\(STRATA_CUDA=OFF, or no CUDA toolkit at build time\\), so it cannot use device memory"
    --device cuda:0)
endif()
