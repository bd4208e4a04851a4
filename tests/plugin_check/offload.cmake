# The offload checks (tools/strata-plugin-check/offload), one process: strata_offload passes every
# optimizer (Adam, AdamW, SGD, SGD with momentum and with Nesterov, Lion) against the
# double-precision reference over 1,000 steps, its fused model copies and its state slots, with
# the state beside the parameters and offloaded to (pinned) host memory; a copy whose Adam leaves
# the bias correction out fails Adam and AdamW from step 1, naming the element, while SGD and Lion
# still pass.
strata_plugin_check_test(offload LIBRARY $<TARGET_FILE:strata_offload> NP 1)
strata_plugin_check_test(offload_cpu LIBRARY $<TARGET_FILE:strata_offload> NP 1
  CONFIG "{\"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true}}")

strata_plugin_check_fixture(plugin_check_broken_offload WRAPS strata_offload
  SOURCE fixtures/broken_offload.cpp)
strata_plugin_check_test(broken_offload LIBRARY $<TARGET_FILE:plugin_check_broken_offload> NP 1
  EXPECT_FAIL
    "FAIL offload\\.optimizer\\.adam: step 1, shard 0, element 0: expected [-0-9.e]+, got [-0-9.e]+ \\(tolerance 5e-5"
    "FAIL offload\\.optimizer\\.adamw: step 1, shard 0, element 0: expected [-0-9.e]+, got [-0-9.e]+"
    "PASS offload\\.optimizer\\.sgd_nesterov"
    "PASS offload\\.optimizer\\.lion")
