# Included by CMakeLists.txt in every pass, the sanitizer pass included.
# The comm conformance suites (tests/plugins/allreduce) across the two hosts, 2 ranks each: every collective,
# dtype and op through each plugin's instances, hierarchical ones included (on 2 x 2 both plugins'
# default instances are two-level, "hierarchical": "auto"; allreduce-mpi's chunked instance and
# allreduce-gloo's hierarchical ones take "true"), now with a real host boundary.
if(TARGET strata-run)
  set(mn_here ${CMAKE_CURRENT_SOURCE_DIR})
  set(mn_run2x2 ${mn_here}/with_topology.sh -- ${mn_here}/strata_run_2x2.sh $<TARGET_FILE:strata-run>)
  # Bar the shared-memory path's own tests: it is for ranks on one host (the create line saying
  # "shm off (the ranks span several hosts" is checked by CMakeLists.txt's example runs).
  add_test(NAME multinode.comm_conformance_2x2.mpi
    COMMAND ${mn_run2x2} mpi -- $<TARGET_FILE:strata_comm_mpi_test>
      --gtest_filter=-Shm.*:ShmLarge.*:Nonblocking.SharedMemorySegmentIsAccountedFromCreateToDestroy)
  # Uneven hosts (2 + 1 ranks): every rank must agree on the hierarchy (a host with one rank
  # still takes part), or creating the hierarchical instance hangs.
  add_test(NAME multinode.comm_conformance_2x1.mpi
    COMMAND ${mn_run2x2} mpi -- $<TARGET_FILE:strata_comm_mpi_test>
      --gtest_filter=-Shm.*:ShmLarge.*:Nonblocking.SharedMemorySegmentIsAccountedFromCreateToDestroy)
  set(mn_conformance multinode.comm_conformance_2x2.mpi multinode.comm_conformance_2x1.mpi)
  if(TARGET strata_comm_gloo_test)
    add_test(NAME multinode.comm_conformance_2x2.gloo
      COMMAND ${mn_run2x2} gloo -- $<TARGET_FILE:strata_comm_gloo_test>
      --gtest_filter=-Shm.*:ShmLarge.*:Nonblocking.SharedMemorySegmentIsAccountedFromCreateToDestroy)
    # Uneven hosts over Gloo: the hierarchical instance goes through each host's first rank.
    add_test(NAME multinode.comm_conformance_2x1.gloo
      COMMAND ${mn_run2x2} gloo -- $<TARGET_FILE:strata_comm_gloo_test>
      --gtest_filter=-Shm.*:ShmLarge.*:Nonblocking.SharedMemorySegmentIsAccountedFromCreateToDestroy)
    list(APPEND mn_conformance multinode.comm_conformance_2x2.gloo
         multinode.comm_conformance_2x1.gloo)
  endif()
  set_tests_properties(${mn_conformance} PROPERTIES
    TIMEOUT 300 RUN_SERIAL TRUE LABELS "mpi;multinode" SKIP_RETURN_CODE 77
    ENVIRONMENT "OMPI_MCA_mpi_yield_when_idle=1")
  set_property(TEST multinode.comm_conformance_2x1.mpi APPEND PROPERTY
    ENVIRONMENT "STRATA_MN_SLOTS_B=1")
  if(TARGET strata_comm_gloo_test)
    set_property(TEST multinode.comm_conformance_2x1.gloo APPEND PROPERTY
      ENVIRONMENT "STRATA_MN_SLOTS_B=1")
  endif()
endif()
