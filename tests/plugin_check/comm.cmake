# The comm checks (tools/strata-plugin-check/comm) at world sizes 1-4: both in-tree comm plugins
# pass with their default config (Gloo bootstraps from the MASTER_ADDR/MASTER_PORT/RANK/... that
# strata-run gives every rank), and a copy of allreduce-mpi whose allreduce computes MIN for MAX
# fails allreduce.<dtype>.max at 2 ranks and more, naming the first differing element; at 1 rank
# MIN and MAX agree, so np1 passes.
# Its caps claim host memory only (Open MPI here is not CUDA-aware): the device checks are one
# skip line per world size saying so, never a pass. It offers ABI 1.10's alltoallv and split: both
# are checked and pass.
strata_plugin_check_test(comm_allreduce_mpi LIBRARY $<TARGET_FILE:strata_allreduce_mpi> NP 4
  EXPECT_OUTPUT "PASS comm\\.np4\\.alltoallv\\.bf16.*SKIP comm\\.np4\\.device: the caps claim host memory only \\(device_mask 1\\): device buffers not checked.*PASS comm\\.np4\\.split")
# Gloo's collectives cost ~10 ms each here at 4 ranks on 2 cores whatever their size (allreduce-mpi:
# well under 1 ms), so its run is latency-bound: 21-29 s at -np 4 in a RelWithDebInfo build, 35 s
# at -np 3 under ASan+UBSan. The sanitizer pass leaves it out (CI time): the same plugin's
# conformance tests run there (tests/plugins/allreduce, comm_gloo_np*), and the checker's comm code runs there
# against allreduce-mpi.
if(NOT STRATA_SANITIZE)
  strata_plugin_check_test(comm_allreduce_gloo LIBRARY $<TARGET_FILE:strata_allreduce_gloo> NP 4)
endif()

# The sanitizer pass leaves the broken copy out too (CI time, 33 s there): what it shows is that
# the checks catch a wrong reduction, which the plain pass shows; the failure-reporting code runs
# under the sanitizers with the other strata's broken copies.
if(NOT STRATA_SANITIZE)
  strata_plugin_check_fixture(plugin_check_broken_comm WRAPS strata_allreduce_mpi
    SOURCE fixtures/broken_comm.cpp)
  strata_plugin_check_test(broken_comm LIBRARY $<TARGET_FILE:plugin_check_broken_comm> NP 4
    EXPECT_FAIL
      "PASS comm\\.np1\\.allreduce\\.f32\\.max"
      "FAIL comm\\.np2\\.allreduce\\.f32\\.max: rank [01]: count 1, blocking, in place: element 0: expected -?[0-9]+, got -?[0-9]+"
      "FAIL comm\\.np4\\.allreduce\\.i32\\.max: rank [0-3]: count 1, blocking, in place: element 0: expected"
      "FAIL comm\\.np3\\.nonblocking\\.ordering: rank [0-2]: allreduce max of 7 \\(started #1, waited #1\\): element [0-9]+: expected"
      "PASS comm\\.np4\\.allreduce\\.f32\\.min")
endif()

# ---- device buffers (comm/plugin_device.*, cuda/cuda_memory.*) ----
# Caps that claim CUDA device memory on a machine without a device (or a checker built without
# CUDA): one skip line saying why, not a pass and not a failure. Where `nvidia-smi -L` lists a GPU
# the device checks run instead, and these fixtures, which claim what they cannot do, must fail
# them.
if(STRATA_HAVE_CUDA)
  set(no_device "no CUDA device on this machine \\(cudaGetDeviceCount: [^)]*\\)")
else()
  set(no_device "this strata-plugin-check was built without CUDA \\([^)]*\\), so it cannot use a device")
  set(on_gpu)  # the checker never runs device checks: the skip is expected everywhere
endif()
# allreduce-mpi's caps with the CUDA bit added: host checks pass, device checks skip.
strata_plugin_check_fixture(plugin_check_claims_cuda WRAPS strata_allreduce_mpi
  SOURCE fixtures/claims_cuda.cpp)
if(STRATA_HAVE_CUDA)
  set(on_gpu ON_CUDA_DEVICE_EXPECT_FAIL
    "FAIL comm\\.np1\\.device\\.allreduce\\.f32\\.sum: rank 0: count 0, blocking, out of place: returned STRATA_ERR_UNSUPPORTED: ")
endif()
strata_plugin_check_test(device_claimed_without_device
  LIBRARY $<TARGET_FILE:plugin_check_claims_cuda> NP 1
  EXPECT_SKIP "PASS comm\\.np1\\.allreduce\\.f32\\.sum.*SKIP comm\\.np1\\.device: ${no_device}: device buffers not checked"
  ${on_gpu})
# Caps that claim device memory only (the catalogue's one-rank fixture, as allreduce-nccl's caps):
# without a device no buffer can be handed over, and the checker says so after the caps.
if(TARGET strata_test_comm_cuda_only)
  if(STRATA_HAVE_CUDA)
    set(on_gpu ON_CUDA_DEVICE_EXPECT_FAIL
      "FAIL comm\\.np1\\.caps: rank 0: allgather of the rank ids returned STRATA_ERR_UNSUPPORTED: ")
  endif()
  strata_plugin_check_test(device_only_without_device
    LIBRARY $<TARGET_FILE:strata_test_comm_cuda_only> NP 1
    EXPECT_SKIP "PASS comm\\.np1\\.caps.*SKIP comm\\.np1\\.device: ${no_device}: the caps claim device memory only, so no collective is checked"
    ${on_gpu})
endif()
# The device path on any machine: the checker built with a stand-in device whose memory is host
# memory (fixtures/stand_in_device.cpp: a separate, poisoned allocation per buffer, so a missing
# copy in or back shows), against allreduce-mpi relabelling cuda:0 buffers as host ones (and
# refusing them without the host's stream): every device.* check must pass, at 2 ranks.
add_executable(plugin_check_stand_in_device ${PROJECT_SOURCE_DIR}/tools/strata-plugin-check/main.cpp
  fixtures/stand_in_device.cpp)
target_link_libraries(plugin_check_stand_in_device PRIVATE strata_plugin_check_core)
# Exports strata_stand_in_device_owns() to the fixture plugin it loads (dlsym).
set_target_properties(plugin_check_stand_in_device PROPERTIES ENABLE_EXPORTS ON)
strata_plugin_check_fixture(plugin_check_device_as_host WRAPS strata_allreduce_mpi
  SOURCE fixtures/device_as_host.cpp)
strata_plugin_check_test(device_stand_in LIBRARY $<TARGET_FILE:plugin_check_device_as_host> NP 2
  CHECKER plugin_check_stand_in_device
  EXPECT_OUTPUT "PASS comm\\.np2\\.allreduce\\.f32\\.sum.*PASS comm\\.np2\\.device\\.allreduce\\.f32\\.sum.*PASS comm\\.np2\\.device\\.reduce_scatter\\.bf16\\.avg.*PASS comm\\.np2\\.device\\.allgather\\.u8.*PASS comm\\.np2\\.device\\.allgatherv\\.f64.*PASS comm\\.np2\\.device\\.broadcast\\.i64")

# On a GPU (label gpu; skipped, saying so, where `nvidia-smi -L` lists none): allreduce-nccl's
# data collectives in device memory pass, and so do its caps, barrier, ordering and error checks
# (all in device memory: its caps claim nothing else). One rank: NCCL cannot notice a rank's
# mismatched count (errors.mismatched_counts needs two), and one device suffices.
if(TARGET strata_allreduce_nccl)
  strata_plugin_check_test(comm_allreduce_nccl_device LIBRARY $<TARGET_FILE:strata_allreduce_nccl>
    NP 1 REQUIRE_CUDA_DEVICE
    EXPECT_OUTPUT "SKIP comm\\.np1\\.host: the caps claim no host memory.*PASS comm\\.np1\\.device\\.allreduce\\.f32\\.sum.*PASS comm\\.np1\\.device\\.broadcast\\.bf16")
endif()

# ---- ABI 1.10's optional alltoallv and split (comm/optional_checks.cpp) ----
# allreduce-mpi offers both: comm_allreduce_mpi above checks them (alltoallv in every dtype, split
# into two halves with an allreduce on each) and they pass. A copy that does not offer them gets one "not offered"
# skip line each, never a failure; copies whose caps claim them while the function is NULL, or
# lies past the table's header.struct_size, fail the caps check naming it.
foreach(variant not_offered null_functions short_table)
  string(TOUPPER ${variant} define)
  strata_plugin_check_fixture(plugin_check_optional_${variant} WRAPS strata_allreduce_mpi
    SOURCE fixtures/optional_1_10.cpp)
  target_compile_definitions(plugin_check_optional_${variant} PRIVATE STRATA_FIXTURE_${define})
endforeach()
strata_plugin_check_test(optional_not_offered
  LIBRARY $<TARGET_FILE:plugin_check_optional_not_offered> NP 2
  EXPECT_SKIP "SKIP comm\\.np1\\.alltoallv: not offered \\(optional since ABI 1\\.10\\): the caps do not claim alltoallv \\(collective_mask lacks STRATA_COLL_ALLTOALLV\\).*SKIP comm\\.np1\\.split: not offered \\(optional since ABI 1\\.10\\): the caps do not claim split \\(features lacks STRATA_COMM_FEATURE_SPLIT\\).*SKIP comm\\.np2\\.split: not offered")
strata_plugin_check_test(optional_null_functions
  LIBRARY $<TARGET_FILE:plugin_check_optional_null_functions> NP 1
  EXPECT_FAIL
    "FAIL comm\\.np1\\.caps: collective_mask claims alltoallv \\(STRATA_COLL_ALLTOALLV\\) but the ops table has no alltoallv \\(NULL\\)"
    "SKIP comm\\.np1\\.alltoallv: not offered"
    "SKIP comm\\.np1\\.split: not offered")
strata_plugin_check_test(optional_short_table
  LIBRARY $<TARGET_FILE:plugin_check_optional_short_table> NP 1
  EXPECT_FAIL
    "FAIL comm\\.np1\\.caps: collective_mask claims alltoallv \\(STRATA_COLL_ALLTOALLV\\) but the ops table has no alltoallv \\(past the table's header\\.struct_size 112, a table older than ABI 1\\.10\\)")
